"""The canvas and resize size (:mod:`llama4_plugin.tiling`), pixel-free: the reference's own
docstring examples here, and its own functions over many sizes in the torchvision venv
(``test_llama4_tiling_live.py``)."""

from __future__ import annotations

import pytest

from llama4_plugin.tiling import TileGrid, best_fit, supported_resolutions, tile_grid


def test_supported_resolutions_are_the_references_example():
    # find_supported_resolutions(5, 224)'s docstring example, in its order.
    assert supported_resolutions(5, 224) == (
        (224, 1120), (1120, 224), (224, 896), (448, 448), (224, 224), (896, 224), (224, 672), (672, 224),
        (224, 448), (448, 224))


def test_best_fit_is_the_references_example():
    res = ((224, 672), (672, 224), (224, 448), (448, 224), (224, 224))
    assert best_fit(200, 300, res, False) == (224, 448)
    # resize_to_max_canvas takes the largest upscale: 672 / 200 limited by 224 / 300 * 3.
    assert best_fit(200, 300, res, True) == (224, 448)
    assert best_fit(1000, 1000, res, False) == (224, 224)


@pytest.mark.parametrize(("w", "h", "grid"), [
    (336, 336, TileGrid(1, 1, (336, 336))),
    (10, 10, TileGrid(1, 1, (336, 336))),        # upscaled up to one tile, no further
    (337, 336, TileGrid(1, 2, (336, 337))),
    (1280, 960, TileGrid(3, 4, (960, 1280))),    # fits the 3x4 canvas as it is: padded only
    (4000, 3000, TileGrid(3, 4, (1008, 1344))),
    (1, 500, TileGrid(2, 1, (500, 1))),
    (5000, 700, TileGrid(2, 8, (376, 2688))),
])
def test_grids(w, h, grid):
    """Values printed by the reference's functions (test_llama4_tiling_live.reference)."""
    assert tile_grid(h, w, 336, 16, False) == grid
    assert grid.frames == (grid.tiles + 1 if grid.tiles > 1 else 1)


def test_max_canvas_upscales_to_the_largest_canvas():
    assert tile_grid(10, 10, 336, 16, True) == TileGrid(4, 4, (1344, 1344))
    assert tile_grid(100, 200, 336, 16, True) == TileGrid(3, 5, (839, 1680))
