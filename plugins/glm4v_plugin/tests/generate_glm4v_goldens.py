#!/usr/bin/env python
"""Generate the glm4v golden cases from the reference: transformers 5.24's Glm4vProcessor and Glm46VProcessor.

Every case is one request (a chat-shaped prompt plus its images) run through the real
processor with its PIL image processor (``backend: "pil"``) or its torchvision one
(``backend: "torchvision"``), built from a preset's explicit arguments (the published
``preprocessor_config.json`` values, ``glm4v_reference``): the ``glm4_1v_9b_thinking``
preset through ``Glm4vProcessor`` over every image, and the ``glm4_6v`` preset through
``Glm46VProcessor`` over a subset (its classes are the same code; these cases prove it).
Accepted requests go to ``golden/cases/<name>/case.json`` in the schema of
``mm_framework.testing.golden``: prompt ids, per-item content hashes, the blake3 of each
image's ``pixel_values`` rows and its ``image_grid_thw``, the expanded ids, offsets (the
item's run of ``<|image|>``) and the M-RoPE positions of ``Glm4vModel.get_rope_index`` (so
torch is needed). ``expected.stages`` holds the blake3 of transformers' decoded RGB and of
its resized uint8 image; the generator checks that the processor's ``pixel_values`` are
those of the resized image (the processor run on it without resizing). Rejected requests
go to ``golden/rejections``. Images are not stored: ``glm4v_images`` rebuilds them from
their names and each case records every file's blake3.

The tokenizer is the small one of ``glm4v_reference`` (the GLM-4 vocabularies are not
available offline; the processor only reads its image token and retokenizes). Run it
where transformers, torch, torchvision, Pillow and blake3 are installed (not mm_framework:
``mm_framework/testing/images.py`` and ``records.py`` are loaded from their files by
``mm_framework/testing/standalone.py``)::

    /work/venvs/tv/bin/python plugins/glm4v_plugin/tests/generate_glm4v_goldens.py

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
import glm4v_reference as ref  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, divergence, file_case, ids_doc, image_jobs, library_versions, reference_request, tensor_doc,
)

# The presets (glm4v_plugin/spec.py), restated here because the generator runs without
# mm_framework; spec_of checks them against the processor's own values.
_PUBLISHED: dict[str, Any] = {
    "family": "glm4v", "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2, "min_pixels": 12544,
    "max_pixels": 9633792, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711], "backend": "pil", "alpha": "composite",
    "exif_transpose": False,
}
PRESETS: dict[str, tuple[dict[str, Any], str]] = {
    "glm4_1v_9b_thinking": ({**_PUBLISHED, "image_token_id": 151343}, "glm4v"),
    "glm4_6v": ({**_PUBLISHED, "image_token_id": 151363}, "glm46v"),
}
BACKENDS = ("pil", "torchvision")
# Where mm_framework deliberately differs from transformers (docs/families/glm4v.md).
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


def chat(images: str) -> str:
    """GLM-4.1V's chat template for one user turn: the images, then the question."""
    return f"[gMASK]<sop><|user|>\n{images}Describe this image.<|assistant|>\n"


MULTI: dict[str, tuple[str, list[str]]] = {
    "multi_pages": (chat(IMG * 3), ["page_a4_150dpi_1240x1754.png", "page_letter_100dpi_850x1100.jpg",
                                    "photo_640x480.jpg"]),
    "multi_text_between": (f"<|user|>\n{IMG}\nthis {IMG}\nDescribe<|assistant|>", ["tiny_10x10.png",
                                                                                   "thin_tall_20x3000.png"]),
    # Bare placeholders, no markers. Two with nothing between them are one run of image tokens,
    # which get_rope_index cannot split into the two grids (it fails), so a newline parts them.
    "raw_placeholders": (f"{ref.IMAGE_TOKEN}\n{ref.IMAGE_TOKEN}", ["photo_640x480.jpg", "tiny_27x5.png"]),
}
PATH_IMAGES = ["exif_rot6_1000x400.jpg", "exif_rot3_640x480.jpg", "exif_rot8_300x700.jpg", "rgba_640x480.png",
               "gray_alpha_LA_480x320.png", "cmyk_640x480.jpg"]
# The GLM-4.6V classes' subset: one of each kind of size and mode.
GLM46V_IMAGES = ["photo_1280x960.jpg", "huge_4000x3000.jpg", "page_a4_300dpi_2480x3508.png", "min_bound_56x56.png",
                 "tiny_27x5.png", "strip_1x150.png", "rgba_640x480.png", "palette_P_trns_320x240.png"]


def spec_of(proc, preset: str, backend: str, entry: str) -> dict[str, Any]:
    """The mm_framework spec of this reference: the values transformers actually holds."""
    ip = proc.image_processor
    spec = {
        "family": "glm4v", "image_token_id": int(proc.image_token_id),
        "patch_size": int(ip.patch_size), "merge_size": int(ip.merge_size),
        "temporal_patch_size": int(ip.temporal_patch_size),
        "min_pixels": int(ip.size.shortest_edge), "max_pixels": int(ip.size.longest_edge),
        "image_mean": list(ip.image_mean), "image_std": list(ip.image_std),
        "backend": backend, "alpha": "drop" if entry == "path" else "composite", "exif_transpose": entry == "path",
    }
    options = ("backend", "alpha", "exif_transpose")
    assert {k: v for k, v in spec.items() if k not in options} == {
        k: v for k, v in PRESETS[preset][0].items() if k not in options}, spec
    return spec


def stages(proc, inp, backend: str):
    """transformers' decoded image (CHW uint8) and its resized uint8 image, as numpy HWC, and
    the processor's pixel_values of the resized image."""
    import numpy as np
    from transformers.image_utils import load_image

    ip = proc.image_processor
    chw = ip.process_image(load_image(inp) if isinstance(inp, str) else inp, do_convert_rgb=True)
    sizing = {"size": ip.size, "resample": ip.resample, "factor": ip.patch_size * ip.merge_size,
              "temporal_factor": ip.temporal_patch_size}
    if backend == "torchvision":
        resized = ip.resize(chw[None], **sizing)
        again = ip(resized, do_resize=False, return_tensors="np")["pixel_values"]
        chw, resized = chw.numpy(), resized[0].numpy()
    else:
        resized = ip.resize(chw, **sizing)
        again = ip(resized, do_resize=False, return_tensors="np", input_data_format="channels_first")["pixel_values"]
    return np.moveaxis(chw, 0, -1), np.moveaxis(resized, 0, -1), again


def run_case(proc, rope, spec: dict[str, Any], text: str, names: list[str], entry: str, tmp: str) -> dict[str, Any]:
    import numpy as np
    import torch

    import glm4v_images

    case, datas, inputs, out = reference_request(proc, text, names, glm4v_images.make, entry, tmp,
                                                 add_special_tokens=False)
    if out is None:
        return case
    pad = spec["image_token_id"]
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    grids = np.asarray(out["image_grid_thw"], dtype=np.int64)
    types = np.asarray(out["mm_token_type_ids"])[0]
    assert np.array_equal(types, (ids == pad).astype(types.dtype))
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
    pos, delta = rope(input_ids=expanded, mm_token_type_ids=torch.from_numpy(types.copy())[None].int(),
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


def jobs_of(preset: str) -> list[tuple[str, str, str, list[str]]]:
    import glm4v_images

    if preset == "glm4_6v":
        return image_jobs(GLM46V_IMAGES, {"multi_pages": MULTI["multi_pages"]}, PATH_IMAGES[:1],
                          lambda _: chat(IMG))
    return image_jobs(list(glm4v_images.IMAGES), MULTI, PATH_IMAGES, lambda _: chat(IMG))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "golden", "cases"))
    ap.add_argument("--rejections", default=os.path.join(HERE, "golden", "rejections"))
    args = ap.parse_args(argv)

    vers = versions()
    for where in (args.out, args.rejections):
        shutil.rmtree(where, ignore_errors=True)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset, (values, model) in PRESETS.items():
            tok = ref.tokenizer(values["image_token_id"])
            rope = ref.rope_fn(values["merge_size"])
            for backend in BACKENDS:
                proc = ref.processor({**values, "backend": backend}, tok, model=model)
                for entry, slug, text, names in jobs_of(preset):
                    name = f"{preset}_{backend}-{slug}"
                    case = {"name": name, "spec": spec_of(proc, preset, backend, entry)}
                    case.update(run_case(proc, rope, case["spec"], text, names, entry, tmp))
                    case["provenance"] = {
                        "generator": "plugins/glm4v_plugin/tests/generate_glm4v_goldens.py",
                        "preset": preset, "processor": type(proc).__name__,
                        "image_processor": type(proc.image_processor).__name__,
                        "positions": "Glm4vModel.get_rope_index", "entry": entry, "prompt_text": text,
                        "image_maker": "glm4v_images", "tokenizer": "glm4v_reference.tokenizer()", **vers,
                    }
                    print(file_case(case, expected_error(case), args.out, args.rejections), flush=True)
                    written += 1
    print(f"wrote {written} case(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
