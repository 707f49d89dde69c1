#!/usr/bin/env python
"""Generate the smolvlm golden cases from the reference: transformers 5.24's SmolVLMProcessor
and Idefics3Processor with their PIL image processors.

Every case is one request (a chat prompt plus its images) run through the real processor,
built from explicit arguments equal to the published configs of
HuggingFaceTB/SmolVLM-256M-Instruct (Idefics3Processor), HuggingFaceTB/SmolVLM2-500M-Video-Instruct
(SmolVLMProcessor) and HuggingFaceM4/Idefics3-8B-Llama3
(``smolvlm_reference.py``; docs/families/smolvlm.md says where each value comes from), with
the tokenizer ``smolvlm_reference.tokenizer`` builds with the ``tokenizers`` library (the
real ones are not available offline; it holds every token the processors add to a prompt at
the preset's id). Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, content hashes, the blake3 of each image's slice
of ``pixel_values``, the expanded ids, offsets (first to last ``<image>`` of the item) and
``rope1d`` positions. ``expected.stages`` holds the blake3 of transformers' decoded RGB and of
its uint8 resizes (longest edge, the grid-sized image when split, the global image); a
``smolvlm`` section adds each item's grid, 16 probe values and the model kwargs
(``pixel_values``, ``pixel_attention_mask``). Rejected requests go to ``golden/rejections``.
Images are rebuilt by ``smolvlm_images`` from their names; each case records their blake3.

Run where transformers, tokenizers, Pillow and blake3 are installed (mm_framework itself is
not imported: ``mm_framework/testing/standalone.py`` loads the image makers and record
helpers from their files)::

    /work/venv-tv/bin/python plugins/smolvlm_plugin/tests/generate_smolvlm_goldens.py

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
    content_hash, digest, ids_doc, image_jobs, reference_request, reference_versions, write_reference_case,
)

PROBES = 16
CHECKPOINTS = {"smolvlm_256m_instruct": "HuggingFaceTB/SmolVLM-256M-Instruct",
               "smolvlm2_500m_video_instruct": "HuggingFaceTB/SmolVLM2-500M-Video-Instruct",
               "idefics3_8b_llama3": "HuggingFaceM4/Idefics3-8B-Llama3"}
IMG = "<image>"
# Where mm_framework deliberately differs from transformers (docs/families/smolvlm.md §5).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}
MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (f"<|im_start|>User:{IMG}{IMG}compare them.<end_of_utterance>\nAssistant:",
                       ["rgb_640x480.jpg", "wide_1000x300.jpg"]),
    "multi_text_between": (f"<|im_start|>User: What is in this image? {IMG} and {IMG}<end_of_utterance>\nAssistant:",
                           ["tiny_10x10.png", "tile_364x364.png"]),
    "raw_only_images": (f"{IMG}{IMG}{IMG}", ["tile_512x512.png", "tall_400x2000.jpg", "one_1x1.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png"]
# The presets, plus each without splitting (the processors' do_image_splitting call option).
VARIANTS = {"": {}, "_no_split": {"do_image_splitting": False}}


def single(name: str) -> str:
    """The chat template's text for one image and a question, generation prompt on (``name`` labels the case)."""
    return f"<|im_start|>User:{IMG}What is in this image?<end_of_utterance>\nAssistant:"


def stages(ip, inp, spec: dict[str, Any]):
    """transformers' decoded CHW image and its uint8 resizes, and the grid (rows, cols)."""
    from transformers.image_utils import SizeDict, load_image

    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    first = ip.resize(chw, SizeDict(longest_edge=spec["size_longest_edge"]), resample=ip.resample)
    tile = spec["max_image_size"]
    if not spec["do_image_splitting"]:
        return chw, [first, ip.resize(first, SizeDict(height=tile, width=tile), resample=ip.resample)], (0, 0)
    cut = ip.resize_for_vision_encoder(first, tile, resample=ip.resample)
    frames, rows, cols = ip.split_images(cut, {"longest_edge": tile}, resample=ip.resample)
    return chw, [first, cut, frames[-1]] if rows else [first, frames[-1]], (rows, cols)


def run_case(proc, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import smolvlm_images

    case, datas, inputs, out = reference_request(proc, text, names, smolvlm_images.make, entry, tmp,
                                                 add_special_tokens=False,
                                                 do_image_splitting=spec["do_image_splitting"])
    if out is None:
        return case
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    mask = np.asarray(out["pixel_attention_mask"])
    assert pv.shape[0] == 1 and mask.dtype == np.int64 and (mask == 1).all()
    image = np.flatnonzero(ids == spec["image_token_id"])
    ends = np.flatnonzero(ids == spec["global_image_token_id"]) + spec["image_seq_len"]
    starts = [int(image[0])] + [int(image[np.searchsorted(image, e, side="right")]) for e in ends[:-1]]
    features, st, extras, row = [], {}, [], 0
    for i, inp in enumerate(inputs):
        chw, resized, (rows, cols) = stages(proc.image_processor, inp, spec)
        n = rows * cols + 1
        item = pv[0, row:row + n]
        features.append({"dtype": "f32", "shape": list(item.shape), "blake3": digest(item)})
        st[f"decoded_rgb[{i}]"] = digest(np.moveaxis(chw, 0, -1))
        for k, r in enumerate(resized):
            st[f"resized_u8[{i}][{k}]"] = digest(np.moveaxis(r, 0, -1))
        flat = item.reshape(-1)
        extras.append({"grid": [rows, cols], "decoded_hw": list(chw.shape[1:]),
                       "probe": [float(flat[j]) for j in np.linspace(0, flat.size - 1, PROBES).astype(np.int64)]})
        row += n
    assert row == pv.shape[1] and len(starts) == len(inputs)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": [{} for _ in inputs],
        "input_ids": ids_doc(ids),
        "offsets": [[s, int(e)] for s, e in zip(starts, ends)],
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    case["smolvlm"] = {"items": extras, "model_kwargs": {
        "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
        "pixel_attention_mask": {"dtype": "i64", "shape": list(mask.shape), "blake3": digest(mask)}}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import smolvlm_images
    import smolvlm_reference

    vers = reference_versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = image_jobs(smolvlm_images.IMAGES, MULTI, PATH_IMAGES, single)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset in CHECKPOINTS:
            published = smolvlm_reference.published_spec(preset)
            for suffix, change in VARIANTS.items():
                for entry, slug, text, names in jobs:
                    if suffix and entry == "path":
                        continue
                    spec = {**published, **change, "alpha": "drop" if entry == "path" else "composite",
                            "exif_transpose": entry == "path"}
                    proc = smolvlm_reference.processor(spec)
                    name = f"{preset}{suffix}-{slug}"
                    case = {"name": name, "spec": spec}
                    case.update(run_case(proc, spec, text, names, entry, tmp))
                    case["provenance"] = {
                        "generator": "plugins/smolvlm_plugin/tests/generate_smolvlm_goldens.py",
                        "preset": preset, "checkpoint": CHECKPOINTS[preset], "processor": type(proc).__name__,
                        "image_processor": type(proc.image_processor).__name__, "entry": entry,
                        "prompt_text": text, "image_maker": "smolvlm_images",
                        "tokenizer": "smolvlm_reference.tokenizer (tokenizers WordLevel with the preset's ids)",
                        **vers,
                    }
                    print(write_reference_case(case, DIVERGENCES, args.out, args.rejections, "smolvlm"), flush=True)
                    written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
