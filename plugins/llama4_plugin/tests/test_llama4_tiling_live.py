"""The canvas and resize size equal what transformers' own ``find_supported_resolutions``,
``get_best_fit`` and ``get_max_res_without_distortion`` give, composed as
``Llama4ImageProcessor._preprocess`` composes them, over every size up to 48 and thousands
of random ones, for several tile sizes and ``max_patches`` and both ``resize_to_max_canvas``
(the torchvision venv; skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework.testing import require_torchvision
from llama4_plugin.tiling import tile_grid

require_torchvision()
import torch  # noqa: E402
from transformers.image_utils import SizeDict  # noqa: E402
from transformers.models.llama4 import image_processing_llama4 as ref  # noqa: E402

CONFIGS = [(336, 16), (336, 1), (336, 5), (224, 9), (14, 16), (336, 32), (100, 7)]


def reference(h: int, w: int, tile: int, max_patches: int, to_max: bool):
    res = torch.tensor(ref.find_supported_resolutions(max_patches, SizeDict(height=tile, width=tile)))
    canvas = ref.get_best_fit((h, w), res, resize_to_max_canvas=to_max)
    target = canvas if to_max else (min(max(h, tile), canvas[0]), min(max(w, tile), canvas[1]))
    new = ref.get_max_res_without_distortion((h, w), target)
    return int(canvas[0]) // tile, int(canvas[1]) // tile, (max(int(new[0]), 1), max(int(new[1]), 1))


def sizes(tile: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    out = [(h, w) for h in range(1, 49) for w in range(1, 49)]
    out += [tuple(int(v) for v in x) for x in rng.integers(1, 6000, (300, 2))]
    out += [tuple(int(v) for v in x) for x in rng.integers(1, 1400, (300, 2))]
    # Sides at and around whole tiles and their simple fractions, where ties in scale happen.
    out += [(a * tile * k // d + e, b * tile) for a in range(1, 6) for b in range(1, 6) for k in (1, 2, 3)
            for d in (1, 2, 7) for e in (-1, 0, 1) if a * tile * k // d + e > 0]
    return out


@pytest.mark.parametrize("to_max", [False, True])
@pytest.mark.parametrize(("tile", "max_patches"), CONFIGS)
def test_grids_equal_the_reference(tile, max_patches, to_max):
    bad = []
    for h, w in sizes(tile, tile * 100 + max_patches):
        g = tile_grid(h, w, tile, max_patches, to_max)
        want = reference(h, w, tile, max_patches, to_max)
        if (g.rows, g.cols, g.resized) != want:
            bad.append(((h, w), (g.rows, g.cols, g.resized), want))
    assert not bad, bad[:5]
