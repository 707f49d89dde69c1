#!/usr/bin/env python
"""Generate the gemma4 golden cases from the reference: transformers 5.24's Gemma4Processor.

Every case is one request (a prompt plus its images) run through the real ``Gemma4Processor``
with the PIL image processor (``Gemma4ImageProcessorPil``), built from explicit arguments
equal to the case's spec (``gemma4_reference``; the preset's values are the processor's class
defaults and Gemma4Config's token ids, docs/families/gemma4.md §1). Accepted requests go to
``golden/cases/<name>/case.json`` in the schema of ``mm_framework.testing.golden``: prompt
ids, per-item content hashes, the blake3 of each image's padded ``pixel_values`` row, the
expanded ids, offsets (first to last soft token of the item) and ``rope1d`` positions.
``expected.stages`` holds the blake3 of transformers' decoded RGB and of its resized uint8
image; a ``gemma4`` section adds per-item target sizes, soft-token counts, 16 probe values
of each feature, and the model kwargs (``pixel_values``, ``image_position_ids``) with the
image processor's ``num_soft_tokens_per_image``. Rejected requests go to
``golden/rejections``. Images are not stored: ``gemma4_images`` rebuilds them from their
names and each case records every file's blake3.

The tokenizer is a word-level one holding the Gemma 4 marker tokens at their ids (the real
one is not available offline; the processor only inserts those markers). Run where
transformers, Pillow and blake3 are installed (mm_framework is not needed: the image makers
and record helpers are loaded from their files by ``mm_framework/testing/standalone.py``)::

    /work/venvs/main/bin/python plugins/gemma4_plugin/tests/generate_gemma4_goldens.py

Images reach the processor as ``PIL.Image`` objects (alpha composited on white, no EXIF
transpose); the ``path`` cases pass file paths (``load_image``: EXIF transpose, alpha
dropped) and pin the spec options ``alpha="drop"``, ``exif_transpose=true``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
from gemma4_reference import IMAGE, image_kwargs, processor  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, ids_doc, image_jobs, reference_request, reference_versions, token_runs,
    write_reference_case,
)

PROBES = 16  # feature values kept per item, at evenly spaced flat indices

# The gemma4 preset (gemma4_plugin.spec.PRESETS["gemma4"]; test_gemma4_golden checks they agree).
PRESET: dict[str, Any] = {
    "family": "gemma4", "image_token_id": 258880, "boi_token_id": 255999, "eoi_token_id": 258882,
    "patch_size": 16, "max_soft_tokens": 280, "pooling_kernel_size": 3, "backend": "pil", "resample": "pil_bicubic",
    "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": False, "image_mean": [0.0, 0.0, 0.0],
    "image_std": [1.0, 1.0, 1.0], "alpha": "composite", "exif_transpose": False,
    "video_token_id": 258884, "video_max_soft_tokens": 70, "video_do_sample_frames": True, "video_num_frames": 32,
    "video_fps": None, "video_resample": "pil_bicubic", "video_do_rescale": True, "video_rescale_factor": 1 / 255,
    "video_do_normalize": True, "video_image_mean": [0.0, 0.0, 0.0], "video_image_std": [1.0, 1.0, 1.0],
    "timestamp_token_ids": dict(zip((*"0123456789", ":", " "), (236771, 236770, 236778, 236800, 236812, 236810, 236825,
                                                                236832, 236828, 236819, 236787, 236743))),
}
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]
# Every other budget, filter and rescale/normalize switch, on a few images each.
VARIANTS: dict[str, dict[str, Any]] = {
    "budget_70": {"max_soft_tokens": 70},
    "budget_140_bilinear": {"max_soft_tokens": 140, "resample": "pil_bilinear"},
    "budget_560_lanczos": {"max_soft_tokens": 560, "resample": "pil_lanczos"},
    "budget_1120": {"max_soft_tokens": 1120},
    "normalized_half": {"do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]},
    "unrescaled_clip": {"do_rescale": False, "do_normalize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD},
}
VARIANT_IMAGES = ["rgb_1280x960.jpg", "wide_1000x300.jpg", "tall_page_800x4000.png", "tiny_10x10.png",
                  "thin_fallback_6000x20.png", "rgba_640x480.png"]

# Where mm_framework deliberately differs from transformers (see the plugin README).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}


def render(parts: list[str]) -> str:
    """A Gemma-style turn: ``parts`` are words or the image token."""
    return "<bos> <|turn> user\n" + " ".join(parts) + " <turn|>\n<|turn> model\n"


def single(name: str) -> str:
    return render([IMAGE, "Describe", "this", "image", "."])


MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (render([IMAGE, IMAGE, "Which", "is", "wider", "?"]),
                       ["rgb_640x480.jpg", "wide_1000x300.jpg"]),
    "multi_text_between": (render(["first", ":", IMAGE, "and", "second", ":", IMAGE, "Compare", "."]),
                           ["tiny_10x10.png", "tall_400x2000.jpg"]),
    "raw_only_images": (IMAGE + IMAGE + IMAGE, ["exact_768x768.png", "rgb_1280x960.jpg", "line_2000x1.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png", "cmyk_640x480.jpg"]


def stages(ip, inp, spec: dict[str, Any]):
    """transformers' own decoded CHW image and its resized uint8 image."""
    from transformers.image_utils import load_image

    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    k = spec["pooling_kernel_size"]
    resized = ip.aspect_ratio_preserving_resize(chw, spec["patch_size"], spec["max_soft_tokens"] * k * k, k,
                                                ip.resample)
    assert chw.dtype == resized.dtype == "uint8", (chw.dtype, resized.dtype)
    return chw, resized


def run_case(spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import gemma4_images

    proc = processor(spec)
    ip = proc.image_processor
    case, datas, inputs, out = reference_request(proc, text, names, gemma4_images.make, entry, tmp,
                                                 add_special_tokens=False, **image_kwargs(spec))
    if out is None:
        return case
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    pos = np.ascontiguousarray(out["image_position_ids"], dtype=np.int64)
    soft = ip(inputs, return_tensors="np", **image_kwargs(spec))["num_soft_tokens_per_image"]
    runs = token_runs(ids, spec["image_token_id"]).tolist()
    # mm_token_type_ids marks the soft tokens only (not boi/eoi): the model's image mask.
    assert np.array_equal(np.asarray(out["mm_token_type_ids"])[0], (ids == spec["image_token_id"]).astype(np.int64))
    mean, std = (np.asarray(spec[k], dtype=np.float32)[:, None] for k in ("image_mean", "image_std"))
    rescale = spec["rescale_factor"] if spec["do_rescale"] else 1.0
    lut = (np.arange(256, dtype=np.float64) * rescale).astype(np.float32)[None, :]
    if spec["do_normalize"]:
        lut = (lut - mean) / std
    lut = np.broadcast_to(lut, (3, 256))
    p = spec["patch_size"]
    features, st, extras, offsets = [], {}, [], []
    for i, inp in enumerate(inputs):
        chw, resized = stages(ip, inp, spec)
        h, w = resized.shape[1:]
        n = (h // p) * (w // p)
        # pixel_values are the patches of a per-channel table of the resized bytes, zero-padded.
        hwc = np.moveaxis(resized, 0, -1)
        want = lut[np.arange(3), hwc].reshape(h // p, p, w // p, p, 3).transpose(0, 2, 1, 3, 4).reshape(n, -1)
        assert np.array_equal(pv[i, :n], want) and not pv[i, n:].any()
        assert (runs[i][1] - runs[i][0]) == int(soft[i]) == n // spec["pooling_kernel_size"] ** 2
        assert ids[runs[i][0] - 1] == spec["boi_token_id"] and ids[runs[i][1]] == spec["eoi_token_id"]
        features.append({"dtype": "f32", "shape": list(pv[i].shape), "blake3": digest(pv[i])})
        offsets.append([runs[i][0], runs[i][1] - 1])
        st[f"decoded_rgb[{i}]"] = digest(np.moveaxis(chw, 0, -1))
        st[f"resized_u8[{i}]"] = digest(hwc)
        flat = pv[i].reshape(-1)
        extras.append({"decoded_hw": list(chw.shape[1:]), "resized_hw": [h, w], "num_soft_tokens": int(soft[i]),
                       "probe": [float(flat[j]) for j in np.linspace(0, n * pv.shape[2] - 1, PROBES).astype(np.int64)]})
    assert len(runs) == len(inputs)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": [{} for _ in inputs],
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    case["gemma4"] = {"items": extras, "model_kwargs": {
        "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
        "image_position_ids": {"dtype": "i64", "shape": list(pos.shape), "blake3": digest(pos)},
        "num_soft_tokens_per_image": [int(s) for s in soft]}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import gemma4_images

    vers = reference_versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = [("gemma4", job) for job in image_jobs(gemma4_images.IMAGES, MULTI, PATH_IMAGES, single)]
    jobs += [(variant, job) for variant in VARIANTS for job in image_jobs(VARIANT_IMAGES, {}, [], single)]
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant, (entry, slug, text, names) in jobs:
            spec = {**PRESET, **VARIANTS.get(variant, {}),
                    "alpha": "drop" if entry == "path" else "composite", "exif_transpose": entry == "path"}
            case = {"name": f"{variant}-{slug}", "spec": spec}
            case.update(run_case(spec, text, names, entry, tmp))
            case["provenance"] = {
                "generator": "plugins/gemma4_plugin/tests/generate_gemma4_goldens.py",
                "variant": variant, "checkpoint": "google/gemma-4 (class defaults, unverified)",
                "processor": "Gemma4Processor", "image_processor": "Gemma4ImageProcessorPil",
                "entry": entry, "prompt_text": text, "image_maker": "gemma4_images",
                "tokenizer": "word-level, gemma4_reference.tokenizer", **vers,
            }
            print(write_reference_case(case, DIVERGENCES, args.out, args.rejections, "gemma4"), flush=True)
            written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
