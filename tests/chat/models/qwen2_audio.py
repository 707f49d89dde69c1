"""Qwen2-Audio-7B-Instruct as a chat test model (the ``qwen2_audio`` family, its plugin in
``plugins/qwen2_audio_plugin``; skipped when that plugin or soundfile/soxr is not installed).

The model directory: the plugin's copies of the published ``config.json`` and
``preprocessor_config.json``, the published chat template (``tests/chat/data/SOURCES.md``) in
``tokenizer_config.json`` as the checkpoint ships it, and a small byte-level BPE tokenizer made
with ``tokenizers`` (the 256 byte symbols, no merges) whose vocabulary carries Qwen2-Audio's
special tokens at their real ids 151643..151648, so the placeholder ids are the model's. Clips
are the plugin's deterministic test clips, given under the ``audio`` key (paths, base64 text),
in multi-turn prompts; a 37 s clip checks the truncation through the whole front door.

The reference renders the published template too: from a directory whose only template is the
tokenizer's (as published), transformers' ``Qwen2AudioProcessor`` falls back to its own
hard-coded ``default_chat_template``, which differs (it also counts ``{"type": "audio"}`` parts
without an ``audio`` or ``audio_url`` key), while mm_framework renders the tokenizer's
(docs/chat.md; docs/families/qwen2_audio.md, section 5). Parts keyed ``audio`` render the same
under both.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

from mm_framework.testing import load_module

from . import Case, ChatModel

REPO = Path(__file__).parents[3]
PLUGIN_TESTS = REPO / "plugins" / "qwen2_audio_plugin" / "tests"
CHECKPOINT = PLUGIN_TESTS / "golden" / "models" / "qwen2-audio-7b-instruct"
TEMPLATE = (Path(__file__).parents[1] / "data" / "qwen2_audio_7b_instruct" / "chat_template.jinja").read_text()
# Qwen2-Audio-7B-Instruct's added tokens, from id 151643 (its added_tokens.json).
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"]
FIRST = 151643


def _needs() -> None:
    import pytest

    import mm_framework as mmf

    pytest.importorskip("soundfile")
    pytest.importorskip("soxr")
    if "qwen2_audio" not in {f["name"] for f in mmf.list_families()}:
        pytest.skip("the qwen2_audio plugin (plugins/qwen2_audio_plugin) is not installed")


def _tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    # In the model's vocabulary too: tokenizers numbers added tokens after the vocabulary
    # unless they are in it, and these must keep the model's ids.
    vocab.update({t: FIRST + k for k, t in enumerate(SPECIALS)})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    doc = json.loads(tok.to_str())
    doc["added_tokens"] = [{"id": FIRST + k, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True} for k, t in enumerate(SPECIALS)]
    return json.dumps(doc)


def make_dir(root: Path) -> Path:
    _needs()
    root.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "preprocessor_config.json"):
        shutil.copy(CHECKPOINT / name, root / name)
    (root / "tokenizer.json").write_text(_tokenizer_json(), encoding="utf-8")
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>", "unk_token": None, "additional_special_tokens": SPECIALS[1:],
              "clean_up_tokenization_spaces": False, "model_max_length": 32768, "chat_template": TEMPLATE}
    (root / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return root


def reference(root: Path, backend: str) -> Any:
    import importlib.util

    import pytest
    from transformers import AutoProcessor

    # With torch importable, WhisperFeatureExtractor runs torch.stft: within the stated tolerance
    # of its numpy path (tests/kernels/test_mel.py), which is what ours equals byte for byte.
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed: the Whisper extractor runs its torch path, not the byte-exact numpy one")

    processor = AutoProcessor.from_pretrained(root)
    processor.chat_template = TEMPLATE
    return processor


def _clips() -> Any:
    return load_module(PLUGIN_TESTS / "qwen2_audio_clips.py", "qwen2_audio_clips")


def cases(media: Path) -> dict[str, Case]:
    clips = _clips()
    paths = {}
    for name in ("voice_16k_mono_3s.wav", "music_44k1_stereo_5s.mp3", "long_16k_mono_37s.flac",
                 "tone_44k1_stereo_2s.wav", "short_16k_mono_50ms.wav"):
        paths[name] = media / name
        paths[name].write_bytes(clips.make(name))
    voice, mp3, long, tone, short = (str(p) for p in paths.values())
    b64 = base64.b64encode(paths["tone_44k1_stereo_2s.wav"].read_bytes()).decode()

    def user(*parts: dict[str, Any]) -> dict[str, Any]:
        return {"role": "user", "content": list(parts)}

    text = {"type": "text", "text": "What's that sound?"}
    return {
        "one clip by path": Case([user({"type": "audio", "audio": voice}, text)], {"add_generation_prompt": True}),
        "mp3, system message": Case([
            {"role": "system", "content": "You answer in one word."},
            user({"type": "audio", "audio": mp3}, text)], {"add_generation_prompt": True}),
        "longer than 30 s": Case([user({"type": "audio", "audio": long}, text)], {"add_generation_prompt": False}),
        "base64 text": Case([user(text, {"type": "audio", "audio": b64})], {"add_generation_prompt": True}),
        "multi-turn, three clips": Case([
            user({"type": "audio", "audio": short}, {"type": "audio", "audio": tone}, text),
            {"role": "assistant", "content": "A click, then a tone."},
            user({"type": "text", "text": "And this?"}, {"type": "audio", "audio": voice}),
        ], {"add_generation_prompt": True}),
        "text only": Case([user(text)], {"add_generation_prompt": True}),
    }


MODELS = [ChatModel("qwen2_audio", make_dir, reference, cases, ("input_features", "feature_attention_mask"))]
