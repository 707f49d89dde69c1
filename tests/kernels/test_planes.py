"""``kernels.rgb_planes``: HWC uint8 pixels as CHW uint8 planes, the native deinterleave
byte for byte equal to numpy's transpose copy (the portable path), for widths around its
16-pixel step, rows a stride apart (a tile of a canvas), and any thread count."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import par
from mm_framework.errors import MediaError
from mm_framework.kernels import native, rgb_planes

RNG = np.random.default_rng(5)
SIZES = [(1, 1), (3, 15), (2, 16), (5, 17), (7, 33), (40, 100), (966, 1288)]


@pytest.fixture(params=["native", "portable"])
def mode(request):
    if request.param == "native" and not native.built():
        pytest.skip(f"native kernels not built: {native.missing_cause()}")
    native.set_mode(request.param)
    yield request.param
    native.set_mode(None)


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_planes_equal_the_transpose(mode, h, w):
    rgb = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
    got = rgb_planes(rgb)
    assert got.dtype == np.uint8 and got.shape == (3, h, w) and got.flags.c_contiguous
    assert got.tobytes() == np.ascontiguousarray(rgb.transpose(2, 0, 1)).tobytes()


def test_a_tile_of_a_canvas(mode):
    canvas = RNG.integers(0, 256, (60, 90, 3), dtype=np.uint8)
    tile = canvas[7:50, 11:80]
    assert rgb_planes(tile).tobytes() == np.ascontiguousarray(tile.transpose(2, 0, 1)).tobytes()


@pytest.mark.parametrize("threads", ["inline", 1, 3])
def test_thread_count_independent(mode, threads):
    rgb = RNG.integers(0, 256, (301, 257, 3), dtype=np.uint8)
    want = np.ascontiguousarray(rgb.transpose(2, 0, 1)).tobytes()
    par.set_threads(threads)
    try:
        assert rgb_planes(rgb).tobytes() == want
    finally:
        par.set_threads(None)


def test_refuses_what_is_not_hwc_rgb(mode):
    with pytest.raises(MediaError, match="3 channels, got 4"):
        rgb_planes(np.zeros((4, 4, 4), np.uint8))
