"""Tile selection: docs/families/intern_vl.md pins, SGLang equivalence, and the documented upstream divergence."""

from __future__ import annotations

import pytest

from intern_vl_plugin.tiling import TileGrid, candidate_grids, select_grid
from .intern_vl_torch_reference import closest_grid, target_ratios


def _grid(w: int, h: int, max_num: int = 12, thumb: bool = True) -> TileGrid:
    return select_grid(w, h, candidate_grids(max_num), thumb)


def test_documented_pins():
    # 640x480 -> (4, 3); a square -> (3, 3) with max_num 12 (ties go to more tiles).
    assert _grid(640, 480) == TileGrid(4, 3, True)
    assert _grid(500, 500) == TileGrid(3, 3, True)
    assert _grid(1, 1) == TileGrid(3, 3, True)


@pytest.mark.parametrize(
    "w, h, cols, rows",
    [(1920, 1080, 4, 2), (1080, 1920, 2, 4), (1000, 1, 12, 1), (1, 1000, 1, 12), (33, 21, 3, 2), (100, 40, 5, 2)],
)
def test_known_grids(w, h, cols, rows):
    assert (_grid(w, h).cols, _grid(w, h).rows) == (cols, rows)


def test_candidates_are_every_grid_within_budget():
    for max_num in (1, 2, 12, 40):
        grids = candidate_grids(max_num)
        assert sorted(grids) == sorted(target_ratios(max_num))
        counts = [c * r for c, r in grids]
        assert counts == sorted(counts)


@pytest.mark.parametrize("max_num", [1, 2, 3, 6, 12, 16, 24, 40])
def test_matches_sglang_selection_exhaustively(max_num):
    # SGLang iterates a set sorted by count only; the order within a count differs from
    # ours, which must never change the choice (see candidate_grids' docstring).
    ours, theirs = candidate_grids(max_num), target_ratios(max_num)
    sizes = list(range(1, 41)) + [97, 128, 333, 1000, 1999, 4096]
    for w in sizes:
        for h in sizes:
            got = select_grid(w, h, ours, True)
            assert (got.cols, got.rows) == closest_grid(w, h, theirs), (w, h, max_num)


def test_upstream_internvl_tie_rule_differs_on_small_images():
    # Upstream find_closest_aspect_ratio keeps a tie only when the image area exceeds half
    # the candidate's pixel area; SGLang (and this plugin) always take more tiles.
    def upstream(w: int, h: int, image_size: int, max_num: int) -> tuple[int, int]:
        best_diff, best = float("inf"), (1, 1)
        for ratio in target_ratios(max_num):
            diff = abs(w / h - ratio[0] / ratio[1])
            if diff < best_diff:
                best_diff, best = diff, ratio
            elif diff == best_diff and w * h > 0.5 * image_size * image_size * ratio[0] * ratio[1]:
                best = ratio
        return best

    assert upstream(32, 32, 16, 12) == (2, 2)
    assert (_grid(32, 32).cols, _grid(32, 32).rows) == (3, 3)


def test_thumbnail_only_with_several_tiles():
    assert _grid(640, 480).tiles == 13
    assert _grid(640, 480, thumb=False).tiles == 12
    single = _grid(640, 480, max_num=1)
    assert (single.blocks, single.thumbnail, single.tiles) == (1, False, 1)
