"""The native normalize programs (``native.norm_chw``, docs/kernels.md "Normalize programs"):
a ChannelNorm's f32 steps, and their bfloat16 rounding (``Bf16Norm``), run in C give the
table's bits on every pixel, for every norm the families build (either arithmetic, either
switch off, shipped and odd statistics), widths around the kernel's 16-pixel step and
512-pixel block, rows a stride apart, any thread count; a program that misses the table
on any value is not used; and the portable path gives the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import par
from mm_framework.kernels import Bf16Norm, ChannelNorm, channel_norm_steps, native
from mm_framework.kernels.norm import native_program

from .kernel_refs import CLIP_MEAN, CLIP_STD, HALF

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")

R = 1 / 255
NORMS = {
    f"{a}-{m}-{rescale:.4g}-{'rescale' if r else ''}{'normalize' if n else ''}": (a, mean, std, rescale, r, n)
    for a in ("pil", "fused")
    for m, (mean, std) in {"clip": (CLIP_MEAN, CLIP_STD), "half": (HALF, HALF),
                           "odd": ((0.1, 0.7, 0.33), (0.2, 1.7, 0.05))}.items()
    for rescale in (R, 0.0037)
    for r, n in ((True, True), (True, False), (False, True))
}
WIDTHS = [1, 7, 16, 17, 511, 512, 513, 1030]


def _norm(key: str) -> ChannelNorm:
    a, mean, std, rescale, r, n = NORMS[key]
    return channel_norm_steps(a, mean, std, rescale, do_rescale=r, do_normalize=n)


def _want(lut: np.ndarray, rgb: np.ndarray) -> bytes:
    return lut[np.arange(3)[:, None, None], np.moveaxis(rgb, -1, 0)].tobytes()


@pytest.mark.parametrize("key", list(NORMS))
def test_programs_give_the_table_f32_and_bf16(key):
    norm = _norm(key)
    bf16 = Bf16Norm(norm)
    # Every program numpy runs (none where no f32 program matches the table: the gather).
    assert (norm.native_steps is None) == (norm.steps is None) == (bf16.native_steps is None)
    rng = np.random.default_rng(len(key))
    for width in WIDTHS:
        rgb = rng.integers(0, 256, (3, width, 3), dtype=np.uint8)
        out, bits = np.empty((3, 3, width), np.float32), np.empty((3, 3, width), np.uint16)
        norm.apply_image(rgb, out)
        bf16.apply_image(rgb, bits)
        assert out.tobytes() == _want(norm.lut, rgb), width
        assert bits.tobytes() == _want(bf16.lut, rgb), width


@pytest.mark.parametrize("threads", ["inline", 1, 3])
def test_a_tile_of_a_canvas_with_any_thread_count(threads):
    canvas = np.random.default_rng(9).integers(0, 256, (300, 700, 3), dtype=np.uint8)
    tile = canvas[13:290, 5:650]
    norm = _norm(f"pil-clip-{R:.4g}-rescalenormalize")
    assert norm.native_steps is not None
    out = np.empty((3,) + tile.shape[:2], np.float32)
    par.set_threads(threads)
    try:
        norm.apply_image(tile, out)
    finally:
        par.set_threads(None)
    assert out.tobytes() == _want(norm.lut, tile)


def test_native_and_portable_give_the_same_bytes():
    rgb = np.random.default_rng(2).integers(0, 256, (64, 333, 3), dtype=np.uint8)
    norm = _norm(f"fused-odd-{R:.4g}-rescalenormalize")
    assert norm.native_steps is not None
    got = {}
    for mode in ("native", "portable"):
        native.set_mode(mode)
        try:
            out, bits = np.empty((3, 64, 333), np.float32), np.empty((3, 64, 333), np.uint16)
            norm.apply_image(rgb, out)
            Bf16Norm(norm).apply_image(rgb, bits)
            got[mode] = (out.tobytes(), bits.tobytes())
        finally:
            native.set_mode(None)
    assert got["native"] == got["portable"]


def test_a_program_that_misses_the_table_is_not_used():
    good = _norm(f"pil-half-{R:.4g}-rescalenormalize")
    assert good.native_steps is not None
    lut = good.lut.copy()
    lut[1, 200] = np.nextafter(lut[1, 200], np.float32(np.inf))  # one value of one channel off by an ulp
    assert native_program(good.steps, lut, False) is None
    assert ChannelNorm(lut, good.steps).native_steps is None
    assert native_program(None, good.lut, False) is None
    assert native_program(((np.power, np.ones(3, np.float32)),), good.lut, False) is None
