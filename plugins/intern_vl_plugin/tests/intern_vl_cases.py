"""The intern_vl parity matrix, shared by the golden generator, the golden test and the live test.

Cases follow docs/families/intern_vl.md (``tests/test_internvl_parity.py`` of the crate): random
uint8 images of eight shapes, seeds 0..7, tile sizes 16 and 32, ``max_num`` 12,
``num_image_token`` 64, compared with ``rtol=1e-6, atol=1e-5``. A few realistic cases at
the InternVL tile size 448 are added. Nothing here imports torch or mm_framework, so the
generator runs in the reference environment and the golden test in the dev one.
"""

from __future__ import annotations

import io
import dataclasses
from collections.abc import Iterator

import numpy as np

RTOL = 1e-6
ATOL = 1e-5

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# (height, width)
SHAPES = ((21, 33), (33, 21), (32, 32), (40, 100), (100, 40), (17, 80), (80, 17), (48, 48))
SEEDS = tuple(range(8))
TILE_SIZES = (16, 32)
# Realistic sizes at 448-pixel tiles: 4x3 + thumbnail, near-square 3x3 + thumbnail, 4x2 + thumbnail.
LARGE = ((480, 640, 100), (300, 301, 101), (1080, 1920, 102))

# Goldens keep the whole feature for seed 0 at tile size 16 and, for every case, about
# this many strided samples plus per-(tile, channel) sums.
SAMPLES_PER_CASE = 97


@dataclasses.dataclass(frozen=True)
class Case:
    height: int
    width: int
    seed: int
    image_size: int
    num_image_token: int
    max_num: int = 12

    @property
    def name(self) -> str:
        return f"{self.height}x{self.width}_s{self.seed}_t{self.image_size}"

    @property
    def full(self) -> bool:
        """Whether the golden stores the whole feature (seed 0 at tile size 16)."""
        return self.seed == 0 and self.image_size == 16

    def rgb(self) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        return rng.integers(0, 256, size=(self.height, self.width, 3), dtype=np.uint8)

    def spec(self) -> dict:
        return {
            "family": "intern_vl",
            "image_token_id": 5,
            "img_context_token_id": 6,
            "img_start_token_id": 3,
            "img_end_token_id": 4,
            "image_size": self.image_size,
            "num_image_token": self.num_image_token,
            "max_num": self.max_num,
            "image_mean": list(IMAGENET_MEAN),
            "image_std": list(IMAGENET_STD),
        }


def cases() -> Iterator[Case]:
    for size in TILE_SIZES:
        for h, w in SHAPES:
            for seed in SEEDS:
                yield Case(h, w, seed, size, 64)
    for h, w, seed in LARGE:
        yield Case(h, w, seed, 448, 256)


def png(rgb: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, "PNG")
    return buf.getvalue()


def sample_positions(size: int, phase: int) -> np.ndarray:
    """Flat indices sampled from a feature of ``size`` elements (a strided comb)."""
    stride = max(1, size // SAMPLES_PER_CASE)
    return np.arange(phase % stride, size, stride)


def tile_channel_sums(feature: np.ndarray) -> np.ndarray:
    """float64 sums over each tile's channel plane: ``[tiles, 3]``."""
    return feature.astype(np.float64).sum(axis=(2, 3))
