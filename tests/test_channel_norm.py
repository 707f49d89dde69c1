"""ChannelNorm (normalize tables as verified f32 programs) and the patchify that uses them.

The program of a :class:`ChannelNorm` is only kept when it reproduces its table on all
256 inputs of every channel; these tests check that rule, that the production path
(patchify, any band split, any thread count) gives the table's bytes for every u8 value,
and that the gather fallback gives the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import par, transforms
from mm_framework.errors import InternalError
from test_transforms import _hf_order  # the transformers-order reference layout
from mm_framework.transforms import (
    ChannelNorm,
    channel_norm_fused,
    channel_norm_pil,
    channel_norm_recip,
    normalize_lut_fused,
    normalize_lut_pil,
    normalize_lut_recip,
    patchify_merged_blocks,
)

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)
_rng = np.random.default_rng(11)
RANDOM_STATS = [(tuple(_rng.uniform(0, 1, 3)), tuple(_rng.uniform(0.05, 1, 3))) for _ in range(6)]
STATS = [(CLIP_MEAN, CLIP_STD), (HALF, HALF), *RANDOM_STATS]

BUILDERS = [
    (channel_norm_pil, normalize_lut_pil),
    (channel_norm_fused, normalize_lut_fused),
    (channel_norm_recip, normalize_lut_recip),
]


def _every_value_image(h: int, w: int, seed: int) -> np.ndarray:
    """Random pixels, plus all 256 values in every channel somewhere in the image."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    flat = img.reshape(-1, 3)
    assert len(flat) >= 256
    for c in range(3):
        flat[rng.permutation(len(flat))[:256], c] = rng.permutation(256)
    return img


@pytest.mark.parametrize(("mean", "std"), STATS)
@pytest.mark.parametrize(("norm_builder", "lut_builder"), BUILDERS)
def test_norm_table_is_the_reference_table_and_program_reproduces_it(norm_builder, lut_builder, mean, std):
    norm = norm_builder(mean, std)
    assert norm.lut.tobytes() == lut_builder(mean, std).tobytes()
    assert not norm.lut.flags.writeable
    if norm.steps is None:
        pytest.skip("no exact program for these statistics: the gather path is used")
    v = np.arange(256, dtype=np.float32)
    for c in range(3):
        x = v.copy()
        for ufunc, k in norm.steps:
            x = ufunc(x, k[c])
            assert x.dtype == np.float32
        assert x.tobytes() == norm.lut[c].tobytes()


@pytest.mark.parametrize(("norm_builder", "_"), BUILDERS)
def test_programs_exist_for_the_shipped_statistics(norm_builder, _):
    """The presets' statistics must take the fast path, or the benchmark regresses silently."""
    for mean, std in ((CLIP_MEAN, CLIP_STD), (HALF, HALF)):
        assert norm_builder(mean, std).steps is not None


def test_a_program_that_differs_anywhere_is_rejected():
    lut = normalize_lut_pil(CLIP_MEAN, CLIP_STD)
    recip = [(np.multiply, np.float32(1 / 255)), (np.subtract, CLIP_MEAN), (np.divide, CLIP_STD)]
    assert normalize_lut_recip(CLIP_MEAN, CLIP_STD).tobytes() != lut.tobytes()
    assert ChannelNorm(lut, [recip]).steps is None
    # One flipped bit in one entry is enough to refuse a program.
    bad = lut.copy()
    bad.view(np.uint32)[1, 200] ^= 1
    assert channel_norm_pil(CLIP_MEAN, CLIP_STD).steps is not None
    pil_program = channel_norm_pil(CLIP_MEAN, CLIP_STD).steps
    assert ChannelNorm(bad, [pil_program]).steps is None
    assert ChannelNorm(lut, [pil_program]).steps is not None


def test_channel_norm_is_immutable_and_checks_its_table():
    norm = channel_norm_fused(HALF, HALF)
    with pytest.raises(AttributeError):
        norm.steps = None
    with pytest.raises(InternalError, match="normalize table"):
        ChannelNorm(np.zeros((3, 255), np.float32))
    with pytest.raises(InternalError, match="normalize table"):
        ChannelNorm(np.zeros((3, 256), np.float64))


def test_identity_program():
    lut = np.tile(np.arange(256, dtype=np.float32), (3, 1))
    norm = ChannelNorm(lut, [[]])
    assert norm.steps == ()
    rgb = _every_value_image(32, 32, 1)
    assert np.array_equal(patchify_merged_blocks(rgb, 4, 2, 2, norm), _hf_order(rgb, 4, 2, 2, lut))


GEOMETRIES = [(56, 84, 14, 2, 2), (64, 32, 16, 2, 2), (36, 24, 4, 3, 2), (12, 18, 3, 2, 3), (8, 8, 2, 1, 1), (28, 56, 14, 1, 2)]


@pytest.mark.parametrize(("h", "w", "ps", "m", "tps"), GEOMETRIES)
@pytest.mark.parametrize(("norm_builder", "_"), BUILDERS)
def test_patchify_program_gather_and_reference_agree_on_every_value(norm_builder, _, h, w, ps, m, tps):
    norm = norm_builder(CLIP_MEAN, CLIP_STD)
    if h * w >= 256:
        rgb = _every_value_image(h, w, h * w)
    else:
        rgb = np.random.default_rng(h).integers(0, 256, (h, w, 3), dtype=np.uint8)
    want = _hf_order(rgb, ps, m, tps, norm.lut)
    assert norm.steps is not None
    assert np.array_equal(patchify_merged_blocks(rgb, ps, m, tps, norm), want)
    assert np.array_equal(patchify_merged_blocks(rgb, ps, m, tps, norm.lut), want)


@pytest.mark.parametrize("threads", ["inline", 2, 3])
@pytest.mark.parametrize("band_pixels", [1, 1000, 1 << 17])
def test_patchify_any_band_split_and_thread_count(monkeypatch, threads, band_pixels):
    """Bands of one merge-window row, ragged bands and whole-image bands, on any pool."""
    monkeypatch.setattr(transforms, "_BAND_PIXELS", band_pixels)
    monkeypatch.setattr(par, "_PAR_MIN_PIXELS", 0)
    big = _every_value_image(600, 1000, 5)
    rgb = big[7:567, 48:944]  # 560 x 896, not C-contiguous
    norm = channel_norm_pil(CLIP_MEAN, CLIP_STD)
    want = _hf_order(np.ascontiguousarray(rgb), 14, 2, 2, norm.lut)
    par.set_threads(threads)
    try:
        for source in (rgb, np.ascontiguousarray(rgb)):
            out = np.full(want.shape, np.nan, np.float32)
            assert patchify_merged_blocks(source, 14, 2, 2, norm, out=out) is out
            assert np.array_equal(out, want)
    finally:
        par.set_threads(None)


def test_patchify_reads_pixel_strided_views():
    """A view with a pixel stride other than 3 bytes (every other column) takes the copy path."""
    big = _every_value_image(56, 112, 3)
    rgb = big[:, ::2]
    norm = channel_norm_fused(HALF, HALF)
    assert np.array_equal(patchify_merged_blocks(rgb, 14, 2, 2, norm), _hf_order(np.ascontiguousarray(rgb), 14, 2, 2, norm.lut))
