#!/usr/bin/env python
"""Generate the llama4 golden cases from the reference: transformers 5.24's Llama4Processor
with Llama4ImageProcessor (torchvision only).

Every case is one request (a chat prompt plus its images) run through the real processor,
built from explicit arguments equal to the published files of
meta-llama/Llama-4-Scout-17B-16E-Instruct (``llama4_reference.py``; docs/families/llama4.md
says where each value comes from), with the tokenizer ``llama4_reference.tokenizer`` builds
with the ``tokenizers`` library (it holds every token the processor adds to a prompt at the
published id). Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, content hashes, the blake3 of each image's slice
of ``pixel_values`` (bfloat16 bits; float32 with normalize off), the expanded ids, offsets
(first to last ``<|patch|>`` of the item, inclusive) and ``rope1d`` positions. ``expected.stages`` holds
the blake3 of transformers' decoded RGB and of the two uint8 images its
``rescale_and_normalize`` receives in that very call (captured, not recomputed): the padded
canvas the tiles are cut from and the global thumbnail. A ``llama4`` section adds each item's
grid, 16 probe values and the model kwargs' ``pixel_values``. Rejected requests go to
``golden/rejections``. Images are rebuilt by ``llama4_images`` from their names.

The spec variants cover every option: the preset, ``resize_to_max_canvas``, fewer
``max_patches``, the BICUBIC and LANCZOS filters, rescale without normalize (float32), CLIP's
mean/std, and a 224-pixel tile.

Run in the torchvision venv (mm_framework itself is not imported:
``mm_framework/testing/standalone.py`` loads the image makers and record helpers)::

    /work/venvs/tv/bin/python plugins/llama4_plugin/tests/generate_llama4_goldens.py
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
    content_hash, digest, ids_doc, image_jobs, reference_request, reference_versions, write_reference_case,
)

PROBES = 16
CHECKPOINT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
IMG = "<|image|>"
# Where mm_framework deliberately differs from transformers (docs/families/llama4.md §5).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}
MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (f"<|header_start|>user<|header_end|>\n\n{IMG}{IMG}compare them.<|eot|>"
                       "<|header_start|>assistant<|header_end|>\n\n", ["rgb_640x480.jpg", "wide_1000x300.jpg"]),
    "multi_text_between": (f"<|header_start|>user<|header_end|>\n\nWhat is in this image? {IMG} and {IMG}<|eot|>",
                           ["tiny_10x10.png", "two_tiles_672x336.png"]),
    "raw_only_images": (f"{IMG}{IMG}{IMG}", ["tile_336x336.png", "tall_400x2000.jpg", "one_1x1.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png"]
CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
# suffix -> (spec change, the images it runs on: None for every job).
SUBSET = ["tiny_10x10.png", "tile_336x336.png", "rgb_640x480.jpg", "rgb_1280x960.jpg", "tall_400x2000.jpg",
          "strip_1x500.png", "rgba_640x480.png", "wide_1000x300.jpg"]
VARIANTS: dict[str, tuple[dict[str, Any], list[str] | None]] = {
    "": ({}, None),
    "_max_canvas": ({"resize_to_max_canvas": True}, None),
    "_max_patches_4": ({"max_patches": 4}, SUBSET),
    "_bicubic": ({"resample": "pil_bicubic"}, SUBSET),
    "_lanczos": ({"resample": "pil_lanczos"}, SUBSET),
    "_rescale_only": ({"do_normalize": False}, SUBSET),
    "_clip_norm": (CLIP, SUBSET),
    "_tile_224_mp9": ({"tile_size": 224, "max_patches": 9}, SUBSET),
}


def single(name: str) -> str:
    """The chat template's text for one image and a question, generation prompt on (``name`` labels the case)."""
    return (f"<|header_start|>user<|header_end|>\n\n{IMG}What is in this image?<|eot|>"
            "<|header_start|>assistant<|header_end|>\n\n")


def u8_array(t) -> Any:
    import numpy as np

    return np.ascontiguousarray(t.numpy())


def bits(t) -> Any:
    """A torch tensor's little-endian bytes as numpy (bfloat16 as its uint16 bits)."""
    import numpy as np
    import torch

    if t.dtype == torch.bfloat16:
        return np.ascontiguousarray(t.contiguous().view(torch.int16).numpy().view(np.uint16))
    return np.ascontiguousarray(t.numpy())


def stages(ip, inp):
    """transformers' decoded CHW image and the uint8 canvas and thumbnail its own call hands
    ``rescale_and_normalize`` (the thumbnail ``None`` for one tile)."""
    from transformers.image_utils import load_image

    image = load_image(inp) if isinstance(inp, str) else inp
    chw = ip.process_image(image, do_convert_rgb=True)
    seen = []
    original = ip.rescale_and_normalize

    def capture(images, *args, **kwargs):
        seen.append(images.clone())
        return original(images, *args, **kwargs)

    ip.rescale_and_normalize = capture
    try:
        ip(image, return_tensors="pt")
    finally:
        del ip.rescale_and_normalize
    assert len(seen) in (1, 2) and all(s.shape[0] == 1 for s in seen)
    return chw, seen[0][0], seen[1][0] if len(seen) == 2 else None


def run_case(proc, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import llama4_images

    case, datas, inputs, out = reference_request(proc, text, names, llama4_images.make, entry, tmp,
                                                 add_special_tokens=False, return_tensors="pt")
    if out is None:
        return case
    ids = out["input_ids"][0].numpy().astype(np.int64)
    pv = bits(out["pixel_values"])
    dtype = "bf16" if spec["do_normalize"] else "f32"
    tile = spec["tile_size"]
    starts = np.flatnonzero(ids == spec["image_start_token_id"])
    ends = np.flatnonzero(ids == spec["image_end_token_id"])
    patch = ids == spec["patch_token_id"]
    features, st, extras, offsets, row = [], {}, [], [], 0
    for i, inp in enumerate(inputs):
        chw, canvas, thumb = stages(proc.image_processor, inp)
        rows, cols = canvas.shape[1] // tile, canvas.shape[2] // tile
        n = rows * cols + (1 if thumb is not None else 0)
        item = pv[row:row + n]
        features.append({"dtype": dtype, "shape": list(item.shape), "blake3": digest(item)})
        st[f"decoded_rgb[{i}]"] = digest(np.moveaxis(u8_array(chw), 0, -1))
        st[f"canvas_u8[{i}]"] = digest(np.moveaxis(u8_array(canvas), 0, -1))
        if thumb is not None:
            st[f"thumb_u8[{i}]"] = digest(np.moveaxis(u8_array(thumb), 0, -1))
        span = np.flatnonzero(patch[starts[i]:ends[i]]) + starts[i]
        offsets.append([int(span[0]), int(span[-1])])  # inclusive, as mm_framework reports them
        flat = item.reshape(-1)
        extras.append({"grid": [rows, cols], "decoded_hw": list(chw.shape[1:]),
                       "probe": [flat[j].item() for j in np.linspace(0, flat.size - 1, PROBES).astype(np.int64)]})
        row += n
    assert row == pv.shape[0] and len(starts) == len(ends) == len(inputs)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": [{} for _ in inputs],
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    case["llama4"] = {"items": extras, "model_kwargs": {
        "pixel_values": {"dtype": dtype, "shape": list(pv.shape), "blake3": digest(pv)}}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import torch
    import torchvision

    import llama4_images
    import llama4_reference

    torch.set_num_threads(1)
    # The reference computes with torch and torchvision (reference_versions marks them unused).
    vers = {**reference_versions(), "torch": torch.__version__, "torchvision": torchvision.__version__}
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = image_jobs(llama4_images.IMAGES, MULTI, PATH_IMAGES, single)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, (change, only) in VARIANTS.items():
            for entry, slug, text, names in jobs:
                if only is not None and (entry == "path" or len(names) > 1 or names[0] not in only):
                    continue
                spec = {**llama4_reference.published_spec(), **change,
                        "alpha": "drop" if entry == "path" else "composite", "exif_transpose": entry == "path"}
                proc = llama4_reference.processor(spec)
                name = f"llama4{suffix}-{slug}"
                case = {"name": name, "spec": spec}
                case.update(run_case(proc, spec, text, names, entry, tmp))
                case["provenance"] = {
                    "generator": "plugins/llama4_plugin/tests/generate_llama4_goldens.py",
                    "checkpoint": CHECKPOINT, "variant": suffix or "preset", "processor": type(proc).__name__,
                    "image_processor": type(proc.image_processor).__name__, "entry": entry, "prompt_text": text,
                    "image_maker": "llama4_images",
                    "tokenizer": "llama4_reference.tokenizer (tokenizers WordLevel with the published ids)",
                    **vers,
                }
                print(write_reference_case(case, DIVERGENCES, args.out, args.rejections, "llama4"), flush=True)
                written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
