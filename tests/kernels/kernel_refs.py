"""References the kernel tests share: the fixture generator, its fixtures, HF's patch order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mm_framework.kernels import channel_norm_fused, channel_norm_pil, normalize_lut_fused, normalize_lut_pil
from mm_framework.testing import load_module

GOLDEN = Path(__file__).parent / "golden"
gen = load_module(GOLDEN / "generate_resize.py", "generate_resize")

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)


def fixture(name: str) -> dict:
    return json.loads((GOLDEN / "resize" / name).read_text())


def hf_order(rgb, ps, m, tps, lut):
    """transformers' numpy patchify (docs/architecture.md, "Patch layouts"), the layout reference."""
    img = np.stack([lut[c][rgb[:, :, c]] for c in range(3)])
    c, h, w = img.shape
    gh, gw = h // ps, w // ps
    p = img.reshape(c, gh // m, m, ps, gw // m, m, ps).transpose(1, 4, 2, 5, 0, 3, 6)
    p = np.broadcast_to(p[:, :, :, :, :, None], p.shape[:5] + (tps, ps, ps))
    return p.reshape(gh * gw, c * tps * ps * ps)


BUILDERS = [(channel_norm_pil, normalize_lut_pil), (channel_norm_fused, normalize_lut_fused)]


def every_value_image(h: int, w: int, seed: int) -> np.ndarray:
    """Random pixels, plus all 256 values in every channel somewhere in the image."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    flat = img.reshape(-1, 3)
    assert len(flat) >= 256
    for c in range(3):
        flat[rng.permutation(len(flat))[:256], c] = rng.permutation(256)
    return img


# scaled_dims pins (docs/architecture.md, "Sizing"); the seed API tests share them.
SCALED_DIMS_PINS = [
    ((80, 60, None, None), (80, 60)),
    ((80, 60, 0.5, None), (40, 30)),
    ((3, 1, 0.1, None), (1, 1)),
    ((0, 0, 0.5, None), (0, 0)),
    ((80, 60, 2.0, None), (160, 120)),
    ((80, 60, 2.0, 120), (120, 90)),
    ((80, 60, 0.9, 40), (72, 54)),
    # Inkling defaults (frac 2.0, cap 2048)
    ((1920, 1080, 2.0, 2048), (2048, 1152)),
    ((640, 480, 2.0, 2048), (1280, 960)),
    ((4000, 3000, 2.0, 2048), (4000, 3000)),
    ((1024, 1024, 2.0, 2048), (2048, 2048)),
    ((2048, 100, 2.0, 2048), (2048, 100)),
    ((50, 34, 2.0, 2048), (100, 68)),
    # half rounds up (Python round would give 2 for 2.5): 5*0.5 = 2.5 -> 3
    ((5, 4, 0.5, None), (3, 2)),
]
