"""Regenerate the intern_vl tolerance goldens from the torch reference.

Run in the reference environment (torch, Pillow, numpy, blake3; no mm_framework needed):

    /work/refvenv/bin/python plugins/intern_vl_plugin/tests/generate_intern_vl_goldens.py

Bit digests are useless for a tolerance contract, so each case stores float data: the
whole feature for the small seed-0 cases, and for every case a strided sample of the
flattened feature plus float64 sums per (tile, channel). Inputs are not stored: they are
regenerated from their seed and checked against the recorded blake3 digest.
Writes ``golden/intern_vl_parity.json`` and ``golden/intern_vl_parity.npz``.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import PIL
import torch
from blake3 import blake3

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import intern_vl_cases as ic  # noqa: E402
from intern_vl_torch_reference import preprocess  # noqa: E402

GOLDEN = HERE / "golden"


def main() -> None:
    torch.set_num_threads(1)
    GOLDEN.mkdir(exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    docs = []
    for k, case in enumerate(ic.cases()):
        rgb = case.rgb()
        feature = preprocess(
            ic.png(rgb),
            image_size=case.image_size,
            max_num=case.max_num,
            mean=ic.IMAGENET_MEAN,
            std=ic.IMAGENET_STD,
        )
        positions = ic.sample_positions(feature.size, k)
        arrays[f"{case.name}/sample"] = feature.reshape(-1)[positions]
        arrays[f"{case.name}/sums"] = ic.tile_channel_sums(feature)
        if case.full:
            arrays[f"{case.name}/full"] = feature
        docs.append(
            {
                "name": case.name,
                "height": case.height,
                "width": case.width,
                "seed": case.seed,
                "image_size": case.image_size,
                "num_image_token": case.num_image_token,
                "max_num": case.max_num,
                "phase": k,
                "input_blake3": blake3(rgb.tobytes()).hexdigest(),
                "shape": list(feature.shape),
            }
        )
    np.savez_compressed(GOLDEN / "intern_vl_parity.npz", **arrays)
    manifest = {
        "cases": docs,
        "rtol": ic.RTOL,
        "atol": ic.ATOL,
        "provenance": {
            "generator": "tests/generate_intern_vl_goldens.py",
            "reference": "SGLang InternVLImageProcessor (normalize, then torch bicubic) on CPU, float32",
            "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "numpy": np.__version__,
            "pillow": PIL.__version__,
            "python": platform.python_version(),
        },
    }
    (GOLDEN / "intern_vl_parity.json").write_text(json.dumps(manifest, indent=1) + "\n")
    size = (GOLDEN / "intern_vl_parity.npz").stat().st_size
    print(f"wrote {len(docs)} cases, npz {size} bytes")


if __name__ == "__main__":
    main()
