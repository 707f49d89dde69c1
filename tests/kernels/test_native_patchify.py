"""The native fused normalize + patchify kernels equal the numpy ones, bit for bit.

Qwen-VL merged blocks (f32 or the uint8 pixels, one frame repeated or one frame per temporal slot) and
Inkling's bf16 patches (with the always-present extra patch column and the bottom pad),
over many sizes and patch geometries, any band split and thread count
(docs/kernels.md, "Qwen-VL merged blocks", "Inkling bf16 patches"). The oracles are the
toolkit's ``patchify_merged_blocks`` and Inkling's ``patchify`` in portable mode; the same
two functions in native mode are the dispatch under test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from inkling_plugin import patchify as inkling

from mm_framework import par
from mm_framework.kernels import (
    Bf16Norm, bf16_bits, channel_norm_fused, channel_norm_pil, native, patchify_merged_blocks,
)

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")

CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
NORMS = [channel_norm_fused(CLIP_MEAN, CLIP_STD), channel_norm_pil((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]
GEOMETRIES = [(14, 2, 2), (16, 2, 2), (14, 1, 1), (7, 3, 3), (2, 2, 1), (1, 1, 2), (10, 2, 2), (20, 1, 2), (9, 2, 2),
              (15, 1, 2), (8, 1, 1)]


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint32)


def _in_mode(mode: str, fn: Callable[..., np.ndarray], *args: object) -> np.ndarray:
    native.set_mode(mode)
    try:
        return fn(*args)
    finally:
        native.set_mode(None)


def portable(fn: Callable[..., np.ndarray], *args: object) -> np.ndarray:
    return _in_mode("portable", fn, *args)


def dispatched(fn: Callable[..., np.ndarray], *args: object) -> np.ndarray:
    return _in_mode("native", fn, *args)


@pytest.mark.parametrize("ps,merge,tps", GEOMETRIES)
def test_qwen_still_image_equals_numpy(ps, merge, tps):
    rng = np.random.default_rng(ps * 100 + merge * 10 + tps)
    step = ps * merge
    for norm in NORMS:
        for bh, bw in ((1, 1), (2, 3), (5, 2)):
            img = rng.integers(0, 256, (bh * step, bw * step, 3), dtype=np.uint8)
            want = portable(patchify_merged_blocks, img, ps, merge, tps, norm)
            assert np.array_equal(_bits(native.patchify_qwen(img, norm.lut, ps, merge, tps)), _bits(want))
            assert np.array_equal(_bits(dispatched(patchify_merged_blocks, img, ps, merge, tps, norm)), _bits(want))


@pytest.mark.parametrize("ps,merge,tps", GEOMETRIES)
def test_qwen_u8_patches_equal_numpy(ps, merge, tps):
    # norm=None: the uint8 pixels in the same layout (vLLM's do_rescale=False, do_normalize=False).
    rng = np.random.default_rng(ps * 100 + merge * 10 + tps + 7)
    step = ps * merge
    for bh, bw in ((1, 1), (2, 3), (5, 2)):
        img = rng.integers(0, 256, (bh * step, bw * step, 3), dtype=np.uint8)
        want = portable(patchify_merged_blocks, img, ps, merge, tps, None)
        got = native.patchify_qwen(img, None, ps, merge, tps)
        assert want.dtype == got.dtype == np.uint8 and np.array_equal(got, want)
        assert np.array_equal(dispatched(patchify_merged_blocks, img, ps, merge, tps, None), want)
        frames = rng.integers(0, 256, (tps, bh * step, bw * step, 3), dtype=np.uint8)[:, :, ::-1][:, ::-1]
        assert np.array_equal(native.patchify_qwen(frames, None, ps, merge, tps),
                              portable(patchify_merged_blocks, frames, ps, merge, tps, None))


@pytest.mark.parametrize("ps,merge,tps", GEOMETRIES)
def test_qwen_bf16_patches_are_the_rounded_f32_patches(ps, merge, tps):
    # A Bf16Norm: the f32 patches rounded to bfloat16 as torch rounds them; the C kernel
    # looks the bits up in its uint16 table, the portable path rounds the f32 patches.
    rng = np.random.default_rng(ps * 100 + merge * 10 + tps + 11)
    step = ps * merge
    for norm in NORMS:
        b16 = Bf16Norm(norm)
        for bh, bw in ((1, 1), (2, 3)):
            img = rng.integers(0, 256, (bh * step, bw * step, 3), dtype=np.uint8)
            want = bf16_bits(portable(patchify_merged_blocks, img, ps, merge, tps, norm))
            got = native.patchify_qwen(img, b16.lut, ps, merge, tps)
            assert got.dtype == np.uint16 and np.array_equal(got, want)
            assert np.array_equal(portable(patchify_merged_blocks, img, ps, merge, tps, b16), want)
            assert np.array_equal(dispatched(patchify_merged_blocks, img, ps, merge, tps, b16), want)
            frames = rng.integers(0, 256, (tps, bh * step, bw * step, 3), dtype=np.uint8)
            assert np.array_equal(native.patchify_qwen(frames, b16.lut, ps, merge, tps),
                                  bf16_bits(portable(patchify_merged_blocks, frames, ps, merge, tps, norm)))


@pytest.mark.parametrize("ps,merge,tps", [g for g in GEOMETRIES if g[2] > 1])
def test_qwen_one_frame_per_temporal_slot(ps, merge, tps):
    # Slot t of every (c, t) plane comes from frame t: equal to the single-frame layouts
    # of each frame, interleaved by slot.
    rng = np.random.default_rng(31)
    step, norm = ps * merge, NORMS[0]
    frames = rng.integers(0, 256, (tps, 2 * step, 3 * step, 3), dtype=np.uint8)
    got = native.patchify_qwen(frames, norm.lut, ps, merge, tps)
    per_frame = [portable(patchify_merged_blocks, f, ps, merge, 1, norm).reshape(-1, 3, 1, ps * ps) for f in frames]
    assert np.array_equal(_bits(got), _bits(np.concatenate(per_frame, axis=2).reshape(got.shape)))


def test_qwen_strided_frames_and_preallocated_out():
    rng = np.random.default_rng(4)
    big = rng.integers(0, 256, (2, 90, 130, 3), dtype=np.uint8)
    frames = big[:, 3:59, 10:122]  # 56 x 112: a view with row and frame strides of the parent
    out = np.full((4 * 8, 3 * 2 * 196), np.nan, np.float32)
    got = native.patchify_qwen(frames, NORMS[0].lut, 14, 2, 2, out=out)
    assert got is out
    per_frame = [portable(patchify_merged_blocks, f, 14, 2, 1, NORMS[0]).reshape(-1, 3, 1, 196) for f in frames]
    assert np.array_equal(_bits(out), _bits(np.concatenate(per_frame, axis=2).reshape(out.shape)))


@pytest.mark.parametrize("ps", [1, 2, 7, 14, 16, 40])
def test_bf16_equals_numpy(ps):
    rng = np.random.default_rng(ps)
    for h, w in ((1, 1), (ps, ps), (ps + 1, 2 * ps - 1), (3 * ps - 2, 3 * ps), (57, 31), (2, 90)):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        want = portable(inkling.patchify, img, ps)
        got = native.patchify_bf16(img, inkling.LUT, inkling.PAD_BITS, ps)
        assert got.dtype == np.uint16 and np.array_equal(got, want), (h, w, ps)
        assert np.array_equal(dispatched(inkling.patchify, img, ps), want)


def test_bf16_strided_view():
    rng = np.random.default_rng(6)
    img = rng.integers(0, 256, (120, 150, 3), dtype=np.uint8)[7:100:2, 3:140]
    got = native.patchify_bf16(img, inkling.LUT, inkling.PAD_BITS, 16)
    assert np.array_equal(got, portable(inkling.patchify, img, 16))


def test_bands_are_independent():
    rng = np.random.default_rng(12)
    img = rng.integers(0, 256, (8 * 28, 5 * 28, 3), dtype=np.uint8)
    lut = NORMS[0].lut
    whole = native.patchify_qwen(img, lut, 14, 2, 2)
    banded = np.zeros_like(whole)
    for lo, hi in ((0, 3), (3, 4), (4, 4), (4, 8)):
        native._native.patchify_qwen(img, lut, banded, 14, 2, 2, lo, hi)
    assert np.array_equal(_bits(whole), _bits(banded))
    whole = native.patchify_qwen(img, None, 14, 2, 2)
    banded = np.zeros_like(whole)
    for lo, hi in ((0, 5), (5, 5), (5, 8)):
        native._native.patchify_qwen(img, None, banded, 14, 2, 2, lo, hi)
    assert np.array_equal(whole, banded)
    whole = native.patchify_bf16(img, inkling.LUT, inkling.PAD_BITS, 40)
    banded = np.zeros_like(whole)
    for lo, hi in ((0, 1), (1, 5), (5, 6)):
        native._native.patchify_bf16(img, inkling.LUT, inkling.PAD_BITS, banded, 40, lo, hi)
    assert np.array_equal(whole, banded)


@pytest.mark.parametrize("mode", ["inline", 1, 2, 4])
def test_thread_count_independent(mode):
    rng = np.random.default_rng(13)
    img = rng.integers(0, 256, (28 * 24, 28 * 30, 3), dtype=np.uint8)
    want_q = portable(patchify_merged_blocks, img, 14, 2, 2, NORMS[0])
    want_u = portable(patchify_merged_blocks, img, 14, 2, 2, None)
    want_b = portable(inkling.patchify, img, 40)
    par.set_threads(mode)
    try:
        got_q = dispatched(patchify_merged_blocks, img, 14, 2, 2, NORMS[0])
        got_u = dispatched(patchify_merged_blocks, img, 14, 2, 2, None)
        got_b = dispatched(inkling.patchify, img, 40)
    finally:
        par.set_threads(None)
    assert np.array_equal(_bits(got_q), _bits(want_q)) and np.array_equal(got_u, want_u)
    assert np.array_equal(got_b, want_b)
