#!/usr/bin/env python
"""Generate the kimi_k25 golden cases from the reference: transformers 5.24's Kimi_K25Processor
with Kimi_K25ImageProcessor (torchvision only).

Every case is one request (a chat prompt plus its images) run through the real processor,
built from explicit arguments (``kimi_k25_reference.py``; docs/families/kimi_k25.md §1 says
where each value comes from), with the tokenizer ``kimi_k25_reference.tokenizer`` builds with
the ``tokenizers`` library (it holds the media markers and ``<|media_pad|>`` at the Kimi K2
ids). Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, content hashes, the blake3 of each image's slice
of ``pixel_values`` (float32), its ``image_grid_thw``, the expanded ids, offsets (first to
last ``<|media_pad|>`` of the item, inclusive) and ``rope1d`` positions. ``expected.stages``
holds the blake3 of transformers' decoded RGB and of the padded uint8 canvas its
``rescale_and_normalize`` receives in that very call (captured, not recomputed). A
``kimi_k25`` section adds 16 probe values per item and the model kwargs. Rejected requests go
to ``golden/rejections``. Images are rebuilt by ``kimi_k25_images`` from their names.

The spec variants cover every option: the preset, a smaller patch budget, a smaller side cap,
the BILINEAR and LANCZOS filters, rescale without normalize, normalize without rescale, CLIP's
mean/std, and 16-pixel patches with a 3x3 merge kernel.

Run in the torchvision venv (mm_framework itself is not imported:
``mm_framework/testing/standalone.py`` loads the image makers and record helpers)::

    /work/venvs/tv/bin/python plugins/kimi_k25_plugin/tests/generate_kimi_k25_goldens.py
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
CHECKPOINT = "moonshotai/Kimi-K2.5"
MEDIA = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"
# Where mm_framework deliberately differs from transformers (docs/families/kimi_k25.md §4).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}
MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (f"<|im_user|>user<|im_middle|>{MEDIA}{MEDIA}compare them.<|im_end|>"
                       "<|im_assistant|>assistant<|im_middle|>", ["rgb_640x480.jpg", "odd_777x333.png"]),
    "multi_text_between": (f"<|im_user|>user<|im_middle|>What is in this image? {MEDIA} and {MEDIA}<|im_end|>",
                           ["tiny_10x10.png", "capped_20x8000.png"]),
    "raw_only_pads": ("<|media_pad|><|media_pad|><|media_pad|>",
                      ["kernel_28x28.png", "tall_400x2000.jpg", "one_1x1.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png"]
CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
SUBSET = ["tiny_10x10.png", "past_kernel_29x57.png", "rgb_640x480.jpg", "rgb_1280x960.jpg", "tall_400x2000.jpg",
          "strip_1x500.png", "rgba_640x480.png", "capped_8000x20.png"]
# suffix -> (spec change, the images it runs on: None for every job).
VARIANTS: dict[str, tuple[dict[str, Any], list[str] | None]] = {
    "": ({}, None),
    "_max_patches_256": ({"max_patches": 256}, SUBSET),
    "_side_32": ({"max_size_per_side": 32}, SUBSET),
    "_bilinear": ({"resample": "pil_bilinear"}, SUBSET),
    "_lanczos": ({"resample": "pil_lanczos"}, SUBSET),
    "_rescale_only": ({"do_normalize": False}, SUBSET),
    "_normalize_only": ({"do_rescale": False}, SUBSET),
    "_clip_norm": (CLIP, SUBSET),
    "_patch_16_merge_3": ({"patch_size": 16, "merge_size": 3, "max_patches": 900}, SUBSET),
}
# The kimi_k2_5 preset (kimi_k25_plugin/spec.py), written out: the generator does not import mm_framework.
PRESET: dict[str, Any] = {
    "family": "kimi_k25", "image_token_id": 163605, "patch_size": 14, "merge_size": 2, "max_patches": 16384,
    "max_size_per_side": 512, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": "pil_bicubic",
    "rescale_factor": 1 / 255, "do_rescale": True, "do_normalize": True, "alpha": "composite",
    "exif_transpose": False,
}


def single(name: str) -> str:
    """The chat template's text for one image and a question, generation prompt on (``name`` labels the case)."""
    return f"<|im_user|>user<|im_middle|>{MEDIA}What is in this image?<|im_end|><|im_assistant|>assistant<|im_middle|>"


def hwc(t) -> Any:
    import numpy as np

    return np.ascontiguousarray(np.moveaxis(t.numpy(), 0, -1))


def stages(ip, inp):
    """transformers' decoded CHW image and the padded uint8 canvas its own call hands
    ``rescale_and_normalize``."""
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
    assert len(seen) == 1 and seen[0].shape[0] == 1
    return chw, seen[0][0]


def run_case(proc, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import kimi_k25_images

    case, datas, inputs, out = reference_request(proc, text, names, kimi_k25_images.make, entry, tmp,
                                                 add_special_tokens=False, return_tensors="pt")
    if out is None:
        return case
    ids = out["input_ids"][0].numpy().astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"].numpy())
    thw = out["image_grid_thw"].numpy()
    pads = np.flatnonzero(ids == spec["image_token_id"])
    merge = spec["merge_size"] ** 2
    features, aux, st, probes, offsets, row, tok = [], [], {}, [], [], 0, 0
    for i, inp in enumerate(inputs):
        chw, canvas = stages(proc.image_processor, inp)
        n = int(thw[i].prod())
        item = pv[row:row + n]
        features.append({"dtype": "f32", "shape": list(item.shape), "blake3": digest(item)})
        aux.append({"image_grid_thw": tensor_doc("i64", thw[i].astype(np.int64))})
        st[f"decoded_rgb[{i}]"] = digest(hwc(chw))
        st[f"resized_u8[{i}]"] = digest(hwc(canvas))
        span = pads[tok:tok + n // merge]
        assert len(span) == n // merge and span[-1] - span[0] == len(span) - 1
        offsets.append([int(span[0]), int(span[-1])])  # inclusive, as mm_framework reports them
        flat = item.reshape(-1)
        probes.append([flat[j].item() for j in np.linspace(0, flat.size - 1, PROBES).astype(np.int64)])
        row, tok = row + n, tok + n // merge
    assert row == pv.shape[0] and tok == len(pads)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": aux,
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    case["kimi_k25"] = {"probes": probes, "model_kwargs": {
        "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
        "image_grid_thw": tensor_doc("i64", thw.astype(np.int64))}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import torch
    import torchvision

    import kimi_k25_images
    import kimi_k25_reference

    torch.set_num_threads(1)
    # The reference computes with torch and torchvision (reference_versions marks them unused).
    vers = {**reference_versions(), "torch": torch.__version__, "torchvision": torchvision.__version__}
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = image_jobs(kimi_k25_images.IMAGES, MULTI, PATH_IMAGES, single)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, (change, only) in VARIANTS.items():
            for entry, slug, text, names in jobs:
                if only is not None and (entry == "path" or len(names) > 1 or names[0] not in only):
                    continue
                spec = {**PRESET, **change, "alpha": "drop" if entry == "path" else "composite",
                        "exif_transpose": entry == "path"}
                proc = kimi_k25_reference.processor(spec)
                name = f"kimi_k25{suffix}-{slug}"
                case = {"name": name, "spec": spec}
                case.update(run_case(proc, spec, text, names, entry, tmp))
                case["provenance"] = {
                    "generator": "plugins/kimi_k25_plugin/tests/generate_kimi_k25_goldens.py",
                    "checkpoint": CHECKPOINT, "variant": suffix or "preset", "processor": type(proc).__name__,
                    "image_processor": type(proc.image_processor).__name__, "entry": entry, "prompt_text": text,
                    "image_maker": "kimi_k25_images",
                    "tokenizer": "kimi_k25_reference.tokenizer (tokenizers WordLevel with the Kimi K2 marker ids)",
                    **vers,
                }
                print(write_reference_case(case, DIVERGENCES, args.out, args.rejections, "kimi_k25"), flush=True)
                written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
