#!/usr/bin/env python
"""Generate the minicpmv4_6 golden cases from the reference: transformers 5.24's
MiniCPMV4_6Processor with MiniCPMV4_6ImageProcessorPil.

Every case is one request (a prompt plus its images) run through the real processor, built
from explicit arguments equal to the preset's spec (``minicpmv4_6_reference.py``;
docs/families/minicpmv4_6.md says where each value comes from and which could not be
verified), with the tokenizer ``minicpmv4_6_reference.tokenizer`` builds (it holds every
token the processor adds to a prompt at the preset's id). Accepted requests go to
``golden/cases/<name>/case.json`` in the schema of ``mm_framework.testing.golden``: prompt
ids, content hashes, the blake3 of each image's columns of ``pixel_values``, the expanded
ids, offsets (first to last ``<|image_pad|>`` of the item, inclusive) and ``rope1d``
positions. ``expected.stages`` holds the blake3 of transformers' decoded RGB and of its
uint8 resizes (the source image, then each slice, row-major); a ``minicpmv4_6`` section adds
each item's grid and ``target_sizes``, 16 probe values and the model kwargs
(``pixel_values``, ``target_sizes``). Rejected requests go to ``golden/rejections``.

Run where transformers, tokenizers, Pillow and blake3 are installed (mm_framework itself is
not imported: ``mm_framework/testing/standalone.py`` loads the image makers and record
helpers from their files)::

    /work/venvs/main/bin/python plugins/minicpmv4_6_plugin/tests/generate_minicpmv4_6_goldens.py

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
REPO = os.path.join(HERE, "..", "..", "..")
sys.path[:0] = [HERE, os.path.join(REPO, "mm_framework", "testing"), os.path.join(HERE, "..")]
import standalone  # noqa: E402

standalone.use_light_modules()
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, ids_doc, image_jobs, reference_request, reference_versions, write_reference_case,
)

PROBES = 16
CHECKPOINT = "openbmb/MiniCPM-V-4.6"
IMG = "<|image_pad|>"
# The preset's spec (the plugin's PRESETS["minicpm_v_4_6"]): the ids the reference tokenizer
# carries and the image processor's class defaults. Written out so the generator does not
# import the plugin; test_minicpmv4_6_golden.py checks the plugin's presets equal it.
PUBLISHED: dict[str, Any] = {
    "family": "minicpmv4_6", "image_token_id": 248056, "image_start_token_id": 248070,
    "image_end_token_id": 248071, "slice_start_token_id": 248078, "slice_end_token_id": 248079,
    "image_id_start_token_id": 248080, "image_id_end_token_id": 248081, "newline_token_id": 198,
    "digit_token_ids": list(range(15, 25)), "backend": "pil", "resample": "pil_bicubic", "slice_mode": True,
    "max_slice_nums": 9, "scale_resolution": 448, "patch_size": 14, "downsample_mode": "16x", "use_image_id": True,
    "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5], "alpha": "composite", "exif_transpose": False, "video_token_id": 248057,
    "video_max_num_frames": 128, "video_stack_frames": 1, "video_slice_mode": True, "video_max_slice_nums": 9,
    "video_scale_resolution": 448,
    "video_downsample_mode": "16x",
}
# Where mm_framework deliberately differs from transformers (docs/families/minicpmv4_6.md §5).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}
MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (f"User:{IMG}{IMG}compare them.\nAssistant:", ["rgb_640x480.jpg", "wide_1000x300.jpg"]),
    "multi_text_between": (f"User: What is in this image? {IMG} and {IMG}\nAssistant:",
                           ["tiny_10x10.png", "square_1344x1344.png"]),
    "raw_only_images": (f"{IMG}{IMG}{IMG}", ["budget_448x448.png", "tall_400x2000.jpg", "one_1x1.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png"]
# The preset, and the options a request or another checkpoint sets (each over every image).
VARIANTS: dict[str, dict[str, Any]] = {
    "": {},
    "_4x": {"downsample_mode": "4x"},
    "_no_slice": {"slice_mode": False},
    "_slices36_no_image_id": {"max_slice_nums": 36, "use_image_id": False},
}
# Variants other than the preset run on this subset (the full table runs on the preset).
SOME = ["tiny_10x10.png", "strip_1x300.png", "over_449x448.png", "rgb_1280x960.jpg", "large_4000x3000.jpg",
        "huge_5000x700.png", "tall_page_800x3000.png", "thin_wide_3000x20.png", "palette_P_500x375.png"]


def single(name: str) -> str:
    """The chat text for one image and a question (``name`` labels the case)."""
    return f"<|im_start|>User:{IMG}\nWhat is in this image?<|im_end|>\n<|im_start|>Assistant:"


def stages(ip, inp, spec: dict[str, Any]):
    """transformers' decoded CHW image, its uint8 frames (source, slices) and the grid."""
    from transformers.image_transforms import divide_to_patches
    from transformers.image_utils import SizeDict, load_image

    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    hw = chw.shape[-2:]
    mode, res, patch = spec["downsample_mode"], spec["scale_resolution"], spec["patch_size"]
    grid = ip.get_sliced_grid(hw, spec["max_slice_nums"], res) if spec["slice_mode"] else None
    sh, sw = ip.find_best_resize(hw, res, patch, mode, allow_upscale=grid is None)
    frames = [ip.resize(chw, size=SizeDict(height=sh, width=sw), resample=ip.resample)]
    if grid is not None:
        rh, rw = ip.get_refine_size(hw, grid, res, patch, mode, allow_upscale=True)
        refine = ip.resize(chw, size=SizeDict(height=rh, width=rw), resample=ip.resample)
        frames += divide_to_patches(refine, (rh // grid[0], rw // grid[1]))
    return chw, frames, tuple(grid) if grid is not None else (0, 0)


def run_case(proc, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import minicpmv4_6_images

    case, datas, inputs, out = reference_request(proc, text, names, minicpmv4_6_images.make, entry, tmp,
                                                 use_image_id=spec["use_image_id"])
    if out is None:
        return case
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    ts = np.asarray(out["target_sizes"])
    assert pv.shape[0] == 1 and ts.dtype == np.int32
    pad = ids == spec["image_token_id"]
    starts = np.flatnonzero(ids == spec["image_start_token_id"]).tolist() + [len(ids)]
    features, st, extras, offsets, col, row = [], {}, [], [], 0, 0
    for i, inp in enumerate(inputs):
        chw, frames, grid = stages(proc.image_processor, inp, spec)
        width = sum(f.shape[1] * f.shape[2] for f in frames) // spec["patch_size"]
        item = pv[0, :, :, col:col + width]
        features.append({"dtype": "f32", "shape": list(item.shape), "blake3": digest(np.ascontiguousarray(item))})
        st[f"decoded_rgb[{i}]"] = digest(np.moveaxis(chw, 0, -1))
        for k, f in enumerate(frames):
            st[f"resized_u8[{i}][{k}]"] = digest(np.ascontiguousarray(np.moveaxis(f, 0, -1)))
        flat = np.ascontiguousarray(item).reshape(-1)
        extras.append({"grid": list(grid), "decoded_hw": list(chw.shape[1:]),
                       "target_sizes": ts[row:row + len(frames)].tolist(),
                       "probe": [float(flat[j]) for j in np.linspace(0, flat.size - 1, PROBES).astype(np.int64)]})
        where = np.flatnonzero(pad[starts[i]:starts[i + 1]]) + starts[i]
        offsets.append([int(where[0]), int(where[-1])])
        col += width
        row += len(frames)
    assert col == pv.shape[-1] and row == len(ts)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": [{} for _ in inputs],
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    case["minicpmv4_6"] = {"items": extras, "model_kwargs": {
        "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
        "target_sizes": {"dtype": "i32", "shape": list(ts.shape), "blake3": digest(ts)}}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import minicpmv4_6_images
    import minicpmv4_6_reference

    vers = reference_versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, change in VARIANTS.items():
            images = minicpmv4_6_images.IMAGES if not suffix else SOME
            jobs = image_jobs(images, MULTI if not suffix else {}, PATH_IMAGES if not suffix else [], single)
            for entry, slug, text, names in jobs:
                spec = {**PUBLISHED, **change, "alpha": "drop" if entry == "path" else "composite",
                        "exif_transpose": entry == "path"}
                proc = minicpmv4_6_reference.processor(spec)
                name = f"minicpm_v_4_6{suffix}-{slug}"
                case = {"name": name, "spec": spec}
                case.update(run_case(proc, spec, text, names, entry, tmp))
                case["provenance"] = {
                    "generator": "plugins/minicpmv4_6_plugin/tests/generate_minicpmv4_6_goldens.py",
                    "preset": "minicpm_v_4_6", "variant": suffix or "preset", "checkpoint": CHECKPOINT,
                    "processor": "MiniCPMV4_6Processor", "image_processor": type(proc.image_processor).__name__,
                    "entry": entry, "prompt_text": text, "image_maker": "minicpmv4_6_images",
                    "tokenizer": "minicpmv4_6_reference.tokenizer (tokenizers WordLevel with the preset's ids)",
                    **vers,
                }
                print(write_reference_case(case, DIVERGENCES, args.out, args.rejections, "minicpmv4_6"), flush=True)
                written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
