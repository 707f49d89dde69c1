"""The slice plan against the reference image processor's own functions, over many sizes
(``get_sliced_grid``, ``find_best_resize``, ``get_refine_size``; pure arithmetic, cheap)."""

from __future__ import annotations

import itertools

import pytest

from minicpmv4_6_plugin import slicing

transformers = pytest.importorskip("transformers")

SIDES = [*range(1, 100), *range(100, 1200, 7), *range(1200, 9000, 211), 20000, 100000, 250000]
SETTINGS = [(9, 448, 14, "16x"), (9, 448, 14, "4x"), (1, 448, 14, "16x"), (2, 448, 14, "16x"),
            (36, 448, 14, "16x"), (5, 200, 16, "4x"), (64, 1000, 10, "16x")]


@pytest.fixture(scope="module")
def reference():
    return transformers.MiniCPMV4_6ImageProcessorPil()


@pytest.mark.parametrize(("max_slices", "resolution", "patch", "mode"), SETTINGS)
def test_plan_equals_the_reference_functions(reference, max_slices, resolution, patch, mode):
    for h, w in itertools.product(SIDES, SIDES):
        grid = reference.get_sliced_grid((h, w), max_slices, resolution)
        got = slicing.plan(h, w, slice_mode=True, max_slice_nums=max_slices, scale_resolution=resolution,
                           patch=patch, downsample_mode=mode)
        source = reference.find_best_resize((h, w), resolution, patch, mode, allow_upscale=grid is None)
        assert got.source == tuple(source), (h, w)
        if grid is None:
            assert (got.rows, got.cols, got.frames) == (0, 0, 1), (h, w)
            continue
        rh, rw = reference.get_refine_size((h, w), grid, resolution, patch, mode, allow_upscale=True)
        assert (got.rows, got.cols) == tuple(grid), (h, w)
        assert got.slice == (rh // grid[0], rw // grid[1]) and rh % grid[0] == rw % grid[1] == 0, (h, w)


def test_without_slice_mode_every_image_is_the_source_alone():
    got = slicing.plan(3000, 4000, slice_mode=False, max_slice_nums=9, scale_resolution=448, patch=14,
                       downsample_mode="16x")
    assert (got.rows, got.cols) == (0, 0) and got.source == (392, 504)
    assert got.source_tokens == 28 * 36 // 16 and got.target_sizes() == [(28, 36)]


def test_token_counts_and_columns_follow_the_sizes():
    got = slicing.plan(960, 1280, slice_mode=True, max_slice_nums=9, scale_resolution=448, patch=14,
                       downsample_mode="16x")
    assert (got.rows, got.cols, got.source, got.slice) == (2, 3, (392, 504), (448, 448))
    assert (got.source_tokens, got.slice_tokens) == (63, 64)
    assert got.columns == (392 * 504 + 6 * 448 * 448) // 14
