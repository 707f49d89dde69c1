#!/usr/bin/env python
"""Generate the deepseek_ocr2 golden cases from the reference: transformers 5.24's
DeepseekOcr2Processor with DeepseekOcr2ImageProcessorPil.

Every case is one request (a prompt plus its images) run through the real processor, built
from explicit arguments equal to the preset (``deepseek_ocr2_reference.py``;
docs/families/deepseek_ocr2.md says where each value comes from), with the tokenizer
``deepseek_ocr2_reference.tokenizer`` builds with the ``tokenizers`` library (DeepSeek's is
not available offline; it holds ``<image>`` at the preset's id, the only token the processor
adds). Each preset case runs three ways: as published (crops of 2..6 tiles), with the
processor option ``crop_to_patches=False`` and with ``min_patches=1, max_patches=9``.
Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, content hashes, the blake3 of each item's local
crops (its feature) and of its global view and crop count (its aux), the expanded ids, the
offsets of each item's ``<image>`` run (first and last) and ``rope1d`` positions. ``expected.stages`` holds
the blake3 of transformers' decoded RGB and of its uint8 resizes (the crops' canvas when
cropped, the global view before padding); a ``deepseek_ocr2`` section adds each item's grid,
16 probe values of each view and the model kwargs. Rejected requests go to
``golden/rejections``. Images are rebuilt by ``deepseek_ocr2_images`` from their names.

Run where transformers, tokenizers, Pillow and blake3 are installed (mm_framework itself is
not imported: ``mm_framework/testing/standalone.py`` loads the image makers and record
helpers from their files)::

    /work/venvs/main/bin/python plugins/deepseek_ocr2_plugin/tests/generate_deepseek_ocr2_goldens.py

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
sys.path[:0] = [HERE, os.path.join(REPO, "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, ids_doc, image_jobs, reference_request, reference_versions, tensor_doc,
    write_reference_case,
)

PROBES = 16
PRESET = "deepseek_ocr2"
CHECKPOINT = "deepseek-community/DeepSeek-OCR-2"
IMG = "<image>"
# The published spec (the plugin's preset; test_deepseek_ocr2_golden.py checks they agree).
PUBLISHED: dict[str, Any] = {
    "family": "deepseek_ocr2", "image_token_id": 128815, "size": 1024, "tile_size": 768, "patch_size": 16,
    "downsample_ratio": 4, "rescale_factor": 1 / 255, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "backend": "pil", "resample": "pil_bicubic", "crop_to_patches": True, "min_patches": 2, "max_patches": 6,
    "background_color": [127, 127, 127], "do_rescale": True, "do_normalize": True, "alpha": "composite",
    "exif_transpose": False,
}
# Where mm_framework refuses deliberately: a 16-bit grey PNG.
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}
# A strip whose global view rounds to an empty size at the case's side: not a difference,
# transformers refuses it too (a ValueError on the empty resize size); mm_framework names the
# cause, before decoding.
EMPTY_VIEW = ("MediaError", "global view rounds to an empty", "not a difference: transformers refuses it too "
              "(ValueError on the empty resize size); mm_framework names the cause before decoding")


def refusals(case: dict[str, Any], spec: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    """:data:`DIVERGENCES` plus the case's images whose global view is empty at its spec."""
    side = spec["size"] if spec["crop_to_patches"] else spec["tile_size"]
    empty = {img["name"]: EMPTY_VIEW for img in case["images"]
             if min(round(n * (side / max(img["size"]))) for n in img["size"]) < 1}
    return {**DIVERGENCES, **empty}
MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (f"{IMG}{IMG}\ncompare them.", ["rgb_640x480.jpg", "wide_1000x300.jpg"]),
    "multi_text_between": (f"Free OCR . {IMG} and {IMG} x", ["tiny_10x10.png", "rgb_1280x960.jpg"]),
    "multi_three": (f"{IMG}{IMG}{IMG}", ["tile_768x768.png", "tall_400x2000.jpg", "one_1x1.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png"]
# The processor's call options (DeepseekOcr2Processor's images_kwargs).
VARIANTS = {"": {}, "_no_crop": {"crop_to_patches": False}, "_crops_1_9": {"min_patches": 1, "max_patches": 9}}


def single(name: str) -> str:
    """DeepSeek-OCR-2's document prompt for one image (``name`` labels the case)."""
    return f"{IMG}\n<|grounding|>Convert the document to markdown ."


def stages(ip, inp, spec: dict[str, Any]):
    """transformers' decoded CHW image, its uint8 resizes and the crop grid (cols, rows)."""
    from transformers.image_utils import SizeDict, load_image
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import get_optimal_tiled_canvas

    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    h, w = chw.shape[1:]
    tile, resized, grid = spec["tile_size"], [], (0, 0)
    if spec["crop_to_patches"] and max(w, h) > tile:
        grid = get_optimal_tiled_canvas((h, w), (tile, tile), spec["min_patches"], spec["max_patches"])
        resized.append(ip.resize(chw, SizeDict(height=tile * grid[1], width=tile * grid[0]), resample=ip.resample))
    side = spec["size"] if spec["crop_to_patches"] else tile
    scale = side / max(w, h)
    resized.append(ip.resize(chw, SizeDict(height=round(h * scale), width=round(w * scale)), resample=ip.resample))
    return chw, resized, grid


def probe(a) -> list[float]:
    import numpy as np

    flat = a.reshape(-1)
    return [float(flat[j]) for j in np.linspace(0, flat.size - 1, PROBES).astype(np.int64)] if flat.size else []


def run_case(proc, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import deepseek_ocr2_images
    import deepseek_ocr2_reference

    case, datas, inputs, out = reference_request(proc, text, names, deepseek_ocr2_images.make, entry, tmp,
                                                 add_special_tokens=False,
                                                 **deepseek_ocr2_reference.image_kwargs(spec))
    if out is None:
        return case
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    counts = np.asarray(out["num_local_patches"])
    assert counts.dtype == np.int64 and counts.shape == (len(inputs),)
    local = (np.ascontiguousarray(out["pixel_values_local"], dtype=np.float32) if "pixel_values_local" in out
             else np.zeros((0, 3, spec["tile_size"], spec["tile_size"]), dtype=np.float32))
    features, aux, st, extras, row, offsets, shift = [], [], {}, [], 0, [], 0
    slots = [i for i, t in enumerate(case["prompt_ids"]) if t == spec["image_token_id"]]
    for i, inp in enumerate(inputs):
        chw, resized, (cols, rows) = stages(proc.image_processor, inp, spec)
        n = int(counts[i])
        assert n == cols * rows
        item = local[row:row + n]
        features.append(tensor_doc("f32", item))
        aux.append({"pixel_values": tensor_doc("f32", pv[i]), "num_local_patches": tensor_doc("i64", counts[i:i + 1])})
        st[f"decoded_rgb[{i}]"] = digest(np.moveaxis(chw, 0, -1))
        for k, r in enumerate(resized):
            st[f"resized_u8[{i}][{k}]"] = digest(np.moveaxis(r, 0, -1))
        extras.append({"grid": [cols, rows], "decoded_hw": list(chw.shape[1:]),
                       "probe_global": probe(pv[i]), "probe_local": probe(item)})
        tokens = (np.ceil(spec["size"] / spec["patch_size"] / spec["downsample_ratio"]) ** 2
                  + np.ceil(spec["tile_size"] / spec["patch_size"] / spec["downsample_ratio"]) ** 2 * n + 1)
        start = slots[i] + shift
        offsets.append([start, start + int(tokens) - 1])  # first and last <image> of the item
        shift += int(tokens) - 1
        row += n
    assert row == local.shape[0] and len(ids) == len(case["prompt_ids"]) + shift
    assert all((ids[s:e + 1] == spec["image_token_id"]).all() for s, e in offsets)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": aux,
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    kwargs = {k: np.asarray(out[k]) for k in ("pixel_values", "num_local_patches", "pixel_values_local") if k in out}
    case["deepseek_ocr2"] = {"items": extras, "model_kwargs": {
        k: {"dtype": {"float32": "f32", "int64": "i64"}[str(v.dtype)], "shape": list(v.shape), "blake3": digest(v)}
        for k, v in kwargs.items()}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import deepseek_ocr2_images
    import deepseek_ocr2_reference

    vers = reference_versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = image_jobs(deepseek_ocr2_images.IMAGES, MULTI, PATH_IMAGES, single)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, change in VARIANTS.items():
            for entry, slug, text, names in jobs:
                if suffix and entry == "path":
                    continue
                spec = {**PUBLISHED, **change, "alpha": "drop" if entry == "path" else "composite",
                        "exif_transpose": entry == "path"}
                proc = deepseek_ocr2_reference.processor(spec)
                name = f"{PRESET}{suffix}-{slug}"
                case = {"name": name, "spec": spec}
                case.update(run_case(proc, spec, text, names, entry, tmp))
                case["provenance"] = {
                    "generator": "plugins/deepseek_ocr2_plugin/tests/generate_deepseek_ocr2_goldens.py",
                    "preset": PRESET, "checkpoint": CHECKPOINT, "processor": type(proc).__name__,
                    "image_processor": type(proc.image_processor).__name__, "entry": entry,
                    "call_options": deepseek_ocr2_reference.image_kwargs(spec), "prompt_text": text,
                    "image_maker": "deepseek_ocr2_images",
                    "tokenizer": "deepseek_ocr2_reference.tokenizer (tokenizers WordLevel, <image> at the preset's id)",
                    **vers,
                }
                line = write_reference_case(case, refusals(case, spec), args.out, args.rejections, "deepseek_ocr2")
                print(line, flush=True)
                written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
