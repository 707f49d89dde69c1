#!/usr/bin/env python
"""Generate the paddleocr_vl golden cases from the reference: transformers 5.24's PaddleOCRVLProcessor.

Every case is one request (a chat-shaped prompt plus its images) run through the real
``PaddleOCRVLProcessor`` with ``PaddleOCRVLImageProcessorPil`` (``backend: "pil"``) or
``PaddleOCRVLImageProcessor`` (``backend: "torchvision"``), both built from the preset's
explicit arguments (transformers' class defaults, ``paddleocr_vl_reference``). Accepted
requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, per-item content hashes, the blake3 of each
image's ``pixel_values`` slice and its ``image_grid_thw``, the expanded ids, offsets (the
item's run of placeholders) and the M-RoPE positions of ``PaddleOCRVLModel.get_rope_index``
(so torch is needed). ``expected.stages`` holds the blake3 of transformers' decoded RGB and
of its resized uint8 image; the generator checks that the processor's ``pixel_values`` are
those of the resized image (the processor run on it without resizing). Rejected requests
go to ``golden/rejections``. Images are not stored: ``paddleocr_vl_images`` rebuilds them
from their names and each case records every file's blake3.

The tokenizer is the small one of ``paddleocr_vl_reference`` (the ERNIE-4.5 vocabulary is
not available offline; the processor only reads its image token and retokenizes). Run it
where transformers, torch, torchvision, Pillow and blake3 are installed (not mm_framework:
``mm_framework/testing/images.py`` and ``records.py`` are loaded from their files by
``mm_framework/testing/standalone.py``)::

    /work/venv-tv/bin/python plugins/paddleocr_vl_plugin/tests/generate_paddleocr_vl_goldens.py

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
sys.path[:0] = [HERE, os.path.join(REPO, "mm_framework", "testing"), os.path.join(REPO, "plugins",
                                                                                   "paddleocr_vl_plugin")]
import standalone  # noqa: E402

standalone.use_light_modules()
import paddleocr_vl_reference as ref  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, divergence, file_case, ids_doc, library_versions, reference_request, tensor_doc,
)

# The preset (paddleocr_vl_plugin/spec.py), restated here because the generator runs without
# mm_framework; spec_of checks it against the processor's own values.
PRESET: dict[str, Any] = {
    "family": "paddleocr_vl", "image_token_id": 100295, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 1,
    "min_pixels": 147456, "max_pixels": 2359296, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711], "backend": "pil", "alpha": "composite",
    "exif_transpose": False,
}
BACKENDS = ("pil", "torchvision")
# Where mm_framework deliberately differs from transformers (docs/families/paddleocr_vl.md).
DIVERGENCES = {
    "png16_gray_640x480.png": ("MediaError", "unsupported color mode",
                               "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); "
                               "mm_framework refuses it"),
}
# The reference's own rejections: the error mm_framework gives for each.
REFUSED = {
    "ratio_1x300.png": ("MediaError", "absolute aspect ratio must be smaller than 200"),
}

IMG = f"{ref.IMAGE_START}{ref.IMAGE_TOKEN}{ref.IMAGE_END}"


def single(name: str) -> str:
    return f"<|begin_of_sentence|>User: {IMG}OCR:\nAssistant:\n"


MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_pages": (f"<|begin_of_sentence|>User: {IMG}{IMG}{IMG}OCR:\nAssistant:\n",
                    ["page_a4_150dpi_1240x1754.png", "page_letter_100dpi_850x1100.jpg", "page_scan_1700x2200.jpg"]),
    "multi_text_between": (f"User: {IMG}\n{IMG}\nOCR: Assistant:", ["tiny_10x10.png", "thin_tall_20x3000.png"]),
    # Bare placeholders, no markers. Two with nothing between them are one run of image tokens,
    # which get_rope_index cannot split into the two grids (it fails), so a newline parts them.
    "raw_placeholders": (f"{ref.IMAGE_TOKEN}\n{ref.IMAGE_TOKEN}", ["photo_640x480.jpg", "tiny_27x5.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "rgba_640x480.png", "gray_alpha_LA_480x320.png", "cmyk_640x480.jpg"]


def spec_of(proc, backend: str, entry: str) -> dict[str, Any]:
    """The mm_framework spec of this reference: the values transformers actually holds."""
    ip = proc.image_processor
    spec = {
        **PRESET,
        "image_token_id": int(proc.image_token_id),
        "patch_size": int(ip.patch_size), "merge_size": int(ip.merge_size),
        "temporal_patch_size": int(ip.temporal_patch_size),
        "min_pixels": int(ip.size.shortest_edge), "max_pixels": int(ip.size.longest_edge),
        "image_mean": list(ip.image_mean), "image_std": list(ip.image_std),
        "backend": backend, "alpha": "drop" if entry == "path" else "composite", "exif_transpose": entry == "path",
    }
    assert {k: v for k, v in spec.items() if k not in ("backend", "alpha", "exif_transpose")} == {
        k: v for k, v in PRESET.items() if k not in ("backend", "alpha", "exif_transpose")}, spec
    return spec


def stages(proc, inp, backend: str):
    """transformers' decoded image (CHW uint8) and its resized uint8 image, as numpy HWC."""
    import numpy as np
    from transformers.image_utils import load_image

    ip = proc.image_processor
    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    factor = ip.patch_size * ip.merge_size
    if backend == "torchvision":
        resized = ip.resize(chw[None], size=ip.size, resample=ip.resample, factor=factor)
        again = ip(resized, do_resize=False, return_tensors="np")["pixel_values"]
        chw, resized = chw.numpy(), resized[0].numpy()
    else:
        resized = ip.resize(chw, size=ip.size, resample=ip.resample, factor=factor)
        again = ip(resized, do_resize=False, return_tensors="np", input_data_format="channels_first")["pixel_values"]
    return np.moveaxis(chw, 0, -1), np.moveaxis(resized, 0, -1), again


def run_case(proc, rope, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np
    import torch

    import paddleocr_vl_images

    case, datas, inputs, out = reference_request(proc, text, names, paddleocr_vl_images.make, entry, tmp,
                                                 add_special_tokens=False)
    if out is None:
        return case
    pad = spec["image_token_id"]
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    grids = np.asarray(out["image_grid_thw"], dtype=np.int64)
    assert np.array_equal(np.asarray(out["mm_token_type_ids"])[0], (ids == pad).astype(np.int64))
    counts = [int(np.prod(g)) // spec["merge_size"] ** 2 for g in grids]
    places = np.flatnonzero(ids == pad)
    assert len(places) == sum(counts)
    features, aux, offsets, st, row, at = [], [], [], {}, 0, 0
    for i, (inp, grid, n) in enumerate(zip(inputs, grids, counts)):
        decoded, resized, again = stages(proc, inp, spec["backend"])
        rows = int(np.prod(grid))
        item = pv[row: row + rows]
        assert item.tobytes() == np.ascontiguousarray(again, dtype=np.float32).tobytes(), f"item {i}: resized stage"
        features.append({"dtype": "f32", "shape": list(item.shape), "blake3": digest(item)})
        aux.append({"image_grid_thw": tensor_doc("i64", grid)})
        offsets.append([int(places[at]), int(places[at + n - 1])])
        st[f"decoded_rgb[{i}]"] = digest(np.ascontiguousarray(decoded))
        st[f"resized_u8[{i}]"] = digest(np.ascontiguousarray(resized))
        row, at = row + rows, at + n
    assert row == len(pv)
    expanded = torch.from_numpy(ids.copy())[None]
    pos, delta = rope(input_ids=expanded, mm_token_type_ids=(expanded == pad).int(),
                      image_grid_thw=torch.from_numpy(grids.copy()))
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features,
        "aux": aux,
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "mrope", "delta": int(delta.reshape(-1)[0]),
                      "blake3": digest(np.ascontiguousarray(pos[:, 0].numpy().astype(np.int64)))},
        "stages": st,
    }
    return case


def versions() -> dict[str, str]:
    import tokenizers
    import torch
    import torchvision
    import transformers

    return {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "torch": torch.__version__, "torchvision": torchvision.__version__, **library_versions()}


def expected_error(case: dict[str, Any]) -> dict[str, Any] | None:
    """The rejection mm_framework must produce: a declared divergence or the reference's own."""
    declared = divergence(case["images"], DIVERGENCES)
    if declared is not None:
        assert "reference_error" not in case, case["reference_error"]
        return declared
    if "reference_error" not in case:
        return None
    for i, img in enumerate(case["images"]):
        if img["name"] in REFUSED:
            kind, match = REFUSED[img["name"]]
            return {"type": kind, "item": i, "match": match, "reference_error": case.pop("reference_error")}
    raise RuntimeError(f"{case['name']}: unexpected reference error {case['reference_error']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)
    import paddleocr_vl_images

    tok = ref.tokenizer()
    rope = ref.rope_fn(PRESET["merge_size"])
    vers = versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    jobs = [("pil_object", n.replace(".", "_"), single(n), [n]) for n in paddleocr_vl_images.IMAGES]
    jobs += [("pil_object", slug, text, names) for slug, (text, names) in MULTI.items()]
    jobs += [("path", "path_" + n.replace(".", "_"), single(n), [n]) for n in PATH_IMAGES]
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for backend in BACKENDS:
            proc = ref.processor({**PRESET, "backend": backend}, tok)
            for entry, slug, text, names in jobs:
                name = f"paddleocr_vl_{backend}-{slug}"
                case = {"name": name, "spec": spec_of(proc, backend, entry)}
                case.update(run_case(proc, rope, case["spec"], text, names, entry, tmp))
                case["provenance"] = {
                    "generator": "plugins/paddleocr_vl_plugin/tests/generate_paddleocr_vl_goldens.py",
                    "preset": "paddleocr_vl", "processor": "PaddleOCRVLProcessor",
                    "image_processor": type(proc.image_processor).__name__,
                    "positions": "PaddleOCRVLModel.get_rope_index", "entry": entry, "prompt_text": text,
                    "image_maker": "paddleocr_vl_images", "tokenizer": "paddleocr_vl_reference.tokenizer()", **vers,
                }
                print(file_case(case, expected_error(case), args.out, args.rejections), flush=True)
                written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
