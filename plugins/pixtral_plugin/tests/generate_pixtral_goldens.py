#!/usr/bin/env python
"""Generate the pixtral golden cases from the reference: transformers 5.24 ``PixtralProcessor``.

Every case is one request (a chat prompt rendered for the checkpoint plus its images)
run through the real ``PixtralProcessor`` with ``PixtralImageProcessorPil``, both built
from the published configuration files in ``golden/models/<preset>/`` and the
Pixtral-12B Tekken tokenizer (see ``pixtral_reference.py``). Accepted requests go to
``golden/cases/<name>/case.json`` in the schema of ``mm_framework.testing.golden``:
prompt ids, per-image content hashes, blake3 of each image's own ``pixel_values`` slice
``[3, H, W]`` (the batch padding cut off), ``image_sizes`` as aux, the expanded ids,
offsets (first to last ``[IMG]`` of each image) and 1-D positions, plus ``stages`` (blake3
of transformers' decoded RGB and resized uint8 images). A ``pixtral`` section adds the
model kwargs (the padded ``pixel_values`` batch and ``image_sizes``), the token grid per
image and the processor's own pixel-free count. Rejected requests go to
``golden/rejections/<name>/case.json``. Images are not stored: ``pixtral_images`` rebuilds
them from their names and each case records every file's blake3.

``golden/blobs.npz`` keeps what is small enough to commit whole: every ``pixel_values``
slice of at most ``FULL_BLOB`` values, a strided sample of every larger one (so a replay
that differs can say where), and transformers' rescale+normalize of the bytes 0..255 per
preset (the exact table the family must use).

Needs transformers 5.24, Pillow 13, numpy, blake3 and mistral-common (for the Tekken
vocabulary file it ships); torch/torchvision are optional (``pixtral_reference``); not
mm_framework: the image makers and record helpers (``mm_framework/testing/images.py``,
``records.py``) are loaded from their files by ``mm_framework/testing/standalone.py``. From
the repository root::

    python plugins/pixtral_plugin/tests/generate_pixtral_goldens.py

Images reach the processor as ``PIL.Image`` objects (``Image.open`` on the bytes): alpha
composited on white, no EXIF transpose. The ``path`` cases pass file paths instead
(``load_image``: EXIF transpose, alpha dropped) and pin ``alpha="drop"``,
``exif_transpose=true``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "..", "mm_framework", "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()
import pixtral_images  # noqa: E402
import pixtral_reference as ref  # noqa: E402
from mm_framework.testing.records import (  # noqa: E402
    content_hash, digest, divergence, ids_doc, library_versions, reference_request, tensor_doc, write_case,
)

GOLDEN = os.path.join(HERE, "golden")
FULL_BLOB = 4096  # pixel_values slices up to this many values are stored whole
SAMPLE = 512  # else about this many values, evenly strided

# Where mm_framework deliberately differs from transformers (see the plugin README).
DIVERGENCES = {
    "grey16_640x480.png": (
        "MediaError",
        "unsupported color mode",
        "transformers clamps 16-bit grey to 0..255 (a full-range image turns white); mm_framework refuses it",
    ),
}

Turns = ref.Turns


def single(name: str) -> Turns:
    return [("user", [("image", name), ("text", "Describe this image.")])]


MULTI: dict[str, Turns] = {
    # Three sizes: the batch is padded to the largest height and width.
    "multi_sizes": [
        ("user", [("text", "Compare "), ("image", "photo_640x480.jpg"), ("text", " with "),
                  ("image", "screenshot_1920x1080.png"), ("image", "tiny_10x10.png"), ("text", ".")])
    ],
    "multi_turn": [
        ("user", [("image", "tall_20x3000.png"), ("text", "What is this?")]),
        ("assistant", [("text", "A thin strip.")]),
        ("user", [("image", "wide_3000x20.png"), ("image", "portrait_333x501.png"), ("text", "And these?")]),
    ],
}
PATH_IMAGES = ["exif_rot6_640x480.jpg", "rgba_640x480.png", "grey_alpha_LA_320x240.png", "photo_640x480.jpg"]


def spec_of(proc, preset: str, entry: str) -> dict[str, Any]:
    """The mm_framework spec of this reference: the values transformers actually loaded."""
    ip = proc.image_processor
    cfg = ref.model_config(preset, "config.json")
    assert proc.image_token_id == cfg["image_token_index"]
    assert ip.resample == 3 and ip.rescale_factor == 1 / 255 and ip.do_pad
    return {
        "family": "pixtral",
        "image_token_id": int(proc.image_token_id),
        "image_break_token_id": int(proc.image_break_token_id),
        "image_end_token_id": int(proc.image_end_token_id),
        "patch_size": int(proc.patch_size),
        "spatial_merge_size": int(proc.spatial_merge_size),
        "longest_edge": int(ip.size.longest_edge),
        "image_mean": [float(v) for v in ip.image_mean],
        "image_std": [float(v) for v in ip.image_std],
        "alpha": "drop" if entry == "path" else "composite",
        "exif_transpose": entry == "path",
    }


def expand(proc, prompt_ids: list[int], sizes: list[tuple[int, int]]) -> tuple[list[int], list[list[int]]]:
    """The prompt ids with each ``[IMG]`` replaced as ``replace_image_token`` does, and the offsets."""
    f, out, offsets, k = proc.patch_size * proc.spatial_merge_size, [], [], 0
    for t in prompt_ids:
        if t != proc.image_token_id:
            out.append(t)
            continue
        rows, cols = sizes[k][0] // f, sizes[k][1] // f
        run = ([proc.image_token_id] * cols + [proc.image_break_token_id]) * rows
        run[-1] = proc.image_end_token_id
        offsets.append([len(out), len(out) + len(run) - 2])
        out.extend(run)
        k += 1
    return out, offsets


def stages(proc, image) -> tuple[np.ndarray, np.ndarray]:
    """transformers' own decoded RGB and resized uint8 image (both HWC) for one input."""
    ip = proc.image_processor
    chw = ip.process_image(image, do_convert_rgb=True)
    from transformers.image_utils import SizeDict

    f = proc.patch_size * proc.spatial_merge_size
    patch = SizeDict(height=f, width=f)
    resized = ip.resize(chw, size=ip.size, patch_size=patch, resample=ip.resample)
    return np.moveaxis(chw, 0, -1), np.moveaxis(resized, 0, -1)


def run_case(proc, preset: str, entry: str, turns: Turns, tmp: str, name: str, blobs: dict) -> dict[str, Any]:
    text = ref.render(preset, turns)
    names = [value for _, content in turns for kind, value in content if kind == "image"]
    case, datas, inputs, out = reference_request(proc, text, names, pixtral_images.make, entry, tmp)
    if out is None:
        return case
    prompt_ids = case["prompt_ids"]
    ids = np.asarray(out["input_ids"])[0].astype(np.int64)
    pv = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
    sizes = [tuple(int(v) for v in s) for s in np.asarray(out["image_sizes"]).tolist()]
    expanded, offsets = expand(proc, prompt_ids, sizes)
    assert expanded == ids.tolist(), "prompt ids do not expand to the processor's ids"

    from transformers.image_utils import load_image

    # What the processor decoded: the PIL image itself, or load_image of a path.
    decoded = [load_image(inp) if isinstance(inp, str) else inp for inp in inputs]
    counts = proc._get_num_multimodal_tokens(image_sizes=[(im.height, im.width) for im in decoded])["num_image_tokens"]
    f = proc.patch_size * proc.spatial_merge_size
    features_, aux, stage_digests, items = [], [], {}, []
    for i, ((h, w), (s, e)) in enumerate(zip(sizes, offsets)):
        own = np.ascontiguousarray(pv[i, :, :h, :w])
        assert not pv[i, :, h:, :].any() and not pv[i, :, :, w:].any(), "batch padding is not zero"
        features_.append(tensor_doc("f32", own))
        if own.size <= FULL_BLOB:
            blobs[f"{name}/pixel_values[{i}]"] = own
        else:
            blobs[f"{name}/sample[{i}]"] = own.reshape(-1)[:: own.size // SAMPLE].copy()
        aux.append({"image_sizes": tensor_doc("i64", np.asarray([h, w], dtype=np.int64))})
        rgb, resized = stages(proc, decoded[i])
        assert resized.shape[:2] == (h, w)
        stage_digests[f"decoded_rgb[{i}]"] = digest(rgb)
        stage_digests[f"resized_u8[{i}]"] = digest(resized)
        tokens = (h // f) * (w // f + 1)
        assert tokens == e - s + 2, (tokens, e - s + 2)
        # _get_num_multimodal_tokens infers the channel axis of a zeros((h, w, 3)) array and
        # reads a height of 1 or 3 as channels-first (docs/families/pixtral.md §6).
        assert counts[i] == tokens or decoded[i].height in (1, 3), (counts[i], tokens)
        items.append({"rows": h // f, "cols": w // f, "tokens": tokens, "decoded_shape": list(rgb.shape)})
    case["expected"] = {
        "hashes": [content_hash(d) for d in datas],
        "features": features_,
        "aux": aux,
        "input_ids": ids_doc(ids),
        "offsets": offsets,
        "positions": {"kind": "rope1d"},
        "stages": stage_digests,
    }
    case["pixtral"] = {
        "items": items,
        "num_image_tokens": [int(c) for c in counts],
        "model_kwargs": {
            "pixel_values": {"dtype": "f32", "shape": list(pv.shape), "blake3": digest(pv)},
            "image_sizes": [list(s) for s in sizes],
        },
    }
    return case


def normalize_table(proc) -> np.ndarray:
    """transformers' rescale + normalize of the bytes 0..255, per channel (float32 [3, 256])."""
    ip = proc.image_processor
    chw = np.broadcast_to(np.arange(256, dtype=np.uint8), (3, 1, 256)).copy()
    out = ip.normalize(ip.rescale(chw, ip.rescale_factor), ip.image_mean, ip.image_std)
    assert out.dtype == np.float32
    return np.ascontiguousarray(out[:, 0, :])


def versions() -> dict[str, str]:
    import mistral_common
    import tokenizers
    import transformers

    v = {
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "mistral_common": mistral_common.__version__,
        "tekken": f"{ref.TEKKEN_FILE} blake3 {digest(open(ref.tekken_path(), 'rb').read())}",
        **library_versions(),
        "processor_import": ref.processor_class()[1],
    }
    try:
        import torch

        v["torch"] = torch.__version__
    except ImportError:
        pass
    return v


def expected_error(case: dict[str, Any]) -> dict[str, Any] | None:
    """The rejection mm_framework must produce: a declared divergence or the reference's own."""
    declared = divergence(case["images"], DIVERGENCES)
    error = case.get("reference_error")
    if declared or error is None:
        return declared
    if "Size must contain" in error:  # a side floored to 0 (docs/families/pixtral.md §1)
        item = next(i for i, img in enumerate(case["images"]) if min(img["size"]) <= 2)
        return {"type": "MediaError", "item": item, "match": "degenerates"}
    raise RuntimeError(f"{case['name']}: unexpected reference error {error}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--presets", default=",".join(ref.PRESETS), help="comma-separated subset")
    ap.add_argument("--out", default=GOLDEN, help="golden directory (cases/, rejections/, blobs.npz)")
    args = ap.parse_args(argv)
    vers = versions()
    blobs: dict[str, np.ndarray] = {}
    for sub in ("cases", "rejections"):
        shutil.rmtree(os.path.join(args.out, sub), ignore_errors=True)
    written = 0
    with tempfile.TemporaryDirectory() as tmp:
        for preset in [p for p in args.presets.split(",") if p]:
            proc = ref.processor(preset)
            blobs[f"normalize_table/{preset}"] = normalize_table(proc)
            jobs = [("pil_object", n.replace(".", "_"), single(n)) for n in pixtral_images.IMAGES]
            jobs += [("pil_object", n, t) for n, t in MULTI.items()]
            if preset == "pixtral_12b":
                jobs += [("path", "path_" + n.replace(".", "_"), single(n)) for n in PATH_IMAGES]
            for entry, slug, turns in jobs:
                name = f"{preset}-{slug}"
                case = {"name": name, "spec": spec_of(proc, preset, entry)}
                case.update(run_case(proc, preset, entry, turns, tmp, name, blobs))
                case["provenance"] = {
                    "generator": "plugins/pixtral_plugin/tests/generate_pixtral_goldens.py",
                    "preset": preset,
                    "model_dir": f"golden/models/{ref.PRESETS[preset]}",
                    "processor": "PixtralProcessor",
                    "image_processor": type(proc.image_processor).__name__,
                    "entry": entry,
                    "prompt_text": ref.render(preset, turns),
                    "image_maker": "pixtral_images",
                    **vers,
                }
                rejection = expected_error(case)
                if rejection:
                    case["expected_error"] = rejection
                    for key in ("expected", "pixtral"):
                        case.pop(key, None)
                    for key in [k for k in blobs if k.startswith(name + "/")]:
                        del blobs[key]
                write_case(os.path.join(args.out, "rejections" if rejection else "cases", name), case)
                written += 1
                ids = case.get("expected", {}).get("input_ids")
                count = len(ids) if isinstance(ids, list) else ids["length"]
                label = f"rejected: {rejection['match']}" if rejection else f"{count} ids"
                print(f"{name}: {label}", flush=True)
    np.savez_compressed(os.path.join(args.out, "blobs.npz"), **blobs)
    print(f"wrote {written} case(s) and {len(blobs)} blob(s) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
