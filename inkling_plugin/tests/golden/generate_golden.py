"""Write the Inkling golden fixtures ``golden_<name>.npz`` next to this script.

Run from the repository root with a Python that has numpy and Pillow 13 (and torch, for
the bf16 cross-check; the project's reference venv has all three)::

    /work/refvenv/bin/python inkling_plugin/tests/golden/generate_golden.py

Expected bits come from ``inkling_reference`` (float32 numpy per-pixel formula, bf16 by
explicit nearest-even comparison); nothing from ``inkling_plugin`` or ``mm_framework`` is
imported (the record helpers, ``mm_framework/testing/records.py``, are loaded from their
file by ``mm_framework/testing/standalone.py``; they need blake3 for the request cases).
With torch present every case's float32 patches are also cast with
``torch.Tensor.to(torch.bfloat16)`` and must give the same bits.

Each npz holds: ``name``, ``fmt`` ("png" | "jpeg"), ``data`` (the encoded bytes as uint8),
``arr`` (``data`` decoded by PIL ``convert("RGB")``, before any rescale), ``patch_size``,
``rescale_frac`` (NaN = None), ``rescale_cap`` (-1 = None), ``h``, ``w`` (after the
rescale) and ``bits`` (uint16 ``[n, ps, ps, 3]``). JPEG bytes decode identically only
with the libjpeg-turbo of the Pillow wheel used here (Pillow 13.0.0).

It also writes end-to-end request cases ``cases/<name>/case.json`` (plus their input
images) in the format of ``mm_framework.testing.golden``, replayed by the family's
conformance tests: expected ids, offsets, features, aux and hashes all come from the
reference here (ids expand each ``image_token_id`` to ``n`` copies; hash = blake3 of the
raw bytes, first 8 bytes big-endian).
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[2] / "mm_framework" / "testing")]
import standalone  # noqa: E402

standalone.use_light_modules()

from inkling_reference import (  # noqa: E402
    make_photo_like,
    ref_decode_rescale,
    ref_patches_f32,
    ref_scaled_dims,
)
import inkling_reference  # noqa: E402
from mm_framework.testing.records import content_hash, ids_doc, tensor_doc  # noqa: E402

# (name, h, w, seed, encoding, patch_size, rescale_frac, rescale_cap)
CASES = [
    # The reference's four photo-like goldens: patch 40, no rescale, PNG.
    ("480x640", 480, 640, 10, "png", 40, None, None),
    ("200x320", 200, 320, 11, "png", 40, None, None),
    ("37x53", 37, 53, 12, "png", 40, None, None),
    ("40x40", 40, 40, 13, "png", 40, None, None),  # w % ps == 0: extra padded column
    # Rescaled: the processor defaults (grow by 2x toward a 2048 long edge), a binding
    # cap, and a downscale.
    ("37x53_f2_c2048", 37, 53, 12, "png", 40, 2.0, 2048),
    ("90x120_f2_c200", 90, 120, 14, "png", 40, 2.0, 200),
    ("200x320_f0.5", 200, 320, 11, "png", 40, 0.5, None),
    # JPEG inputs (PIL decode), plain and rescaled.
    ("200x320_jpeg", 200, 320, 15, "jpeg", 40, None, None),
    ("120x160_jpeg_f2_c2048", 120, 160, 16, "jpeg", 40, 2.0, 2048),
    # Decode conventions: alpha dropped (not composited), grayscale replicated.
    ("48x64_rgba", 48, 64, 17, "png-rgba", 40, None, None),
    ("50x30_gray_f2_c2048", 50, 30, 18, "png-gray", 40, 2.0, 2048),
    # Other patch sizes: the seed's 34x50 at 16 (3x4 patches) and an odd size.
    ("34x50_ps16", 34, 50, 19, "png", 16, None, None),
    ("37x53_ps15", 37, 53, 20, "png", 15, None, None),
]


def encode(arr: np.ndarray, encoding: str, seed: int) -> tuple[str, bytes]:
    im = Image.fromarray(arr, "RGB")
    if encoding == "png-rgba":
        alpha = np.random.default_rng(seed + 1000).integers(0, 256, size=arr.shape[:2], dtype=np.uint8)
        im = Image.fromarray(np.dstack([arr, alpha]), "RGBA")
    elif encoding == "png-gray":
        im = im.convert("L")
    buf = io.BytesIO()
    if encoding == "jpeg":
        im.save(buf, "JPEG", quality=90)
        return "jpeg", buf.getvalue()
    im.save(buf, "PNG")
    return "png", buf.getvalue()


# (case name, spec, prompt ids, [(file name, h, w, seed, encoding)])
REQUESTS = [
    (
        "defaults_png_jpeg",
        {"family": "inkling", "patch_size": 40, "rescale_frac": 2.0, "rescale_cap": 2048, "image_token_id": -101},
        [1, -101, 2, 3, -101, 4],
        [("input_0.png", 37, 53, 21, "png"), ("input_1.jpg", 70, 45, 22, "jpeg")],
    ),
    (
        "ps16_no_rescale",
        {"family": "inkling", "patch_size": 16, "rescale_frac": None, "rescale_cap": None, "image_token_id": 9},
        [9, 5, 9, 6, 9],
        [
            ("input_0.png", 34, 50, 23, "png"), ("input_1.png", 32, 32, 24, "png-rgba"),
            ("input_2.png", 5, 90, 25, "png"),
        ],
    ),
]


def write_request(name: str, spec: dict, prompt: list[int], images: list[tuple]) -> None:
    case_dir = HERE / "cases" / name
    shutil.rmtree(case_dir, ignore_errors=True)
    case_dir.mkdir(parents=True)
    ps, frac, cap, tok = spec["patch_size"], spec["rescale_frac"], spec["rescale_cap"], spec["image_token_id"]
    features, aux, hashes, counts = [], [], [], []
    for file_name, h, w, seed, encoding in images:
        _, data = encode(make_photo_like(h, w, seed), encoding, seed)
        (case_dir / file_name).write_bytes(data)
        arr = ref_decode_rescale(data, frac, cap)
        bits = inkling_reference.ref_patchify(arr, ps)
        nph, npw = -(-arr.shape[0] // ps), arr.shape[1] // ps + 1
        features.append(tensor_doc("bf16", bits))
        aux.append({
            "patch_grid": tensor_doc("i64", np.array([nph, npw], dtype=np.int64)),
            "image_size": tensor_doc("i64", np.array(arr.shape[:2], dtype=np.int64)),
        })
        hashes.append(content_hash(data))
        counts.append(nph * npw)
    ids, offsets, k = [], [], 0
    for t in prompt:
        if t == tok:
            offsets.append([len(ids), len(ids) + counts[k] - 1])
            ids += [tok] * counts[k]
            k += 1
        else:
            ids.append(t)
    assert k == len(images)
    import PIL

    doc = {
        "name": name,
        "spec": spec,
        "prompt_ids": prompt,
        "images": [f for f, *_ in images],
        "expected": {
            "hashes": hashes,
            "features": features,
            "aux": aux,
            "input_ids": ids_doc(np.asarray(ids, dtype=np.int64)),
            "offsets": offsets,
            "positions": {"kind": "rope1d"},
        },
        "provenance": {"generator": "inkling_plugin/tests/golden/generate_golden.py", "pillow": PIL.__version__},
    }
    (case_dir / "case.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"request {name}: {len(images)} images, {len(ids)} ids")


def torch_bits(patches: np.ndarray) -> np.ndarray | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.from_numpy(patches).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)


def main() -> None:
    cross_checked = 0
    for name, h, w, seed, encoding, ps, frac, cap in CASES:
        fmt, data = encode(make_photo_like(h, w, seed), encoding, seed)
        decoded = ref_decode_rescale(data, None, None)
        rescaled = ref_decode_rescale(data, frac, cap)
        assert rescaled.shape[:2][::-1] == ref_scaled_dims(decoded.shape[1], decoded.shape[0], frac, cap)
        patches = ref_patches_f32(rescaled, ps)
        bits = inkling_reference.bf16_round_bits(patches)
        tb = torch_bits(patches)
        if tb is not None:
            assert np.array_equal(tb, bits), f"{name}: torch bf16 cast disagrees with the reference rounding"
            cross_checked += 1
        np.savez_compressed(
            HERE / f"golden_{name}.npz",
            name=np.array(name),
            fmt=np.array(fmt),
            data=np.frombuffer(data, dtype=np.uint8),
            arr=decoded,
            patch_size=np.int64(ps),
            rescale_frac=np.float64(np.nan if frac is None else frac),
            rescale_cap=np.int64(-1 if cap is None else cap),
            h=np.int64(rescaled.shape[0]),
            w=np.int64(rescaled.shape[1]),
            bits=bits,
        )
        print(f"{name}: {fmt} {w}x{h} -> {rescaled.shape[1]}x{rescaled.shape[0]}, ps {ps}, {bits.shape[0]} patches")
    print(f"torch cross-check: {cross_checked}/{len(CASES)} cases")
    for request in REQUESTS:
        write_request(*request)
    print("GOLDEN_OK")


if __name__ == "__main__":
    main()
