"""Normalize tables (exact against transformers) and ChannelNorm's verified f32 programs.

The program of a :class:`ChannelNorm` is only kept when it reproduces its table on all
256 inputs of every channel; these tests check that rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from .kernel_refs import BUILDERS, CLIP_MEAN, CLIP_STD, HALF, every_value_image, fixture, hf_order
from mm_framework.errors import InternalError, SpecError
from mm_framework.kernels import (
    ChannelNorm,
    channel_norm_fused,
    channel_norm_pil,
    channel_norm_steps,
    normalize_lut_fused,
    normalize_lut_pil,
    normalize_lut_recip,
    patchify_merged_blocks,
)

@pytest.mark.parametrize("name", ["clip", "half"])
def test_normalize_luts_match_transformers(name):
    """Both tables equal what transformers' own rescale/normalize ops produce, bit for bit."""
    ref = fixture("normalize_luts.json")[name]
    pil = np.frombuffer(bytes.fromhex(ref["pil"]), np.float32).reshape(3, 256)
    fused = np.frombuffer(bytes.fromhex(ref["fused"]), np.float32).reshape(3, 256)
    assert normalize_lut_pil(ref["mean"], ref["std"]).tobytes() == pil.tobytes()
    assert normalize_lut_fused(ref["mean"], ref["std"]).tobytes() == fused.tobytes()
    assert not np.array_equal(pil, fused)  # the two roundings really are different


def test_normalize_lut_differs_per_resampler():
    pil = normalize_lut_pil((0.5,) * 3, (0.5,) * 3)
    fused = normalize_lut_fused((0.5,) * 3, (0.5,) * 3)
    assert np.count_nonzero(pil[0] != fused[0]) == 128
    for lut in (pil, fused):
        assert (lut[:, 0] == -1.0).all() and (lut[:, 255] == 1.0).all()
    assert np.abs(pil - fused).max() < 3e-7


def test_normalize_lut_recip_multiplies_by_the_f32_reciprocal():
    lut = normalize_lut_recip(CLIP_MEAN, CLIP_STD)
    v = np.arange(256, dtype=np.float32)
    for c in range(3):
        want = (v * np.float32(1 / 255) - np.float32(CLIP_MEAN[c])) / np.float32(CLIP_STD[c])
        assert lut[c].tobytes() == want.astype(np.float32).tobytes()


@pytest.mark.parametrize(
    ("mean", "std"),
    [((0.5, 0.5), (0.5, 0.5, 0.5)), ((0.5,) * 3, (0.5, 0.0, 0.5)), ((float("nan"), 0, 0), (1, 1, 1))],
)
@pytest.mark.parametrize("builder", [normalize_lut_pil, normalize_lut_fused, normalize_lut_recip])
def test_normalize_lut_rejects_bad_params(builder, mean, std):
    with pytest.raises(SpecError, match="mean and std"):
        builder(mean, std)


_rng = np.random.default_rng(11)
RANDOM_STATS = [(tuple(_rng.uniform(0, 1, 3)), tuple(_rng.uniform(0.05, 1, 3))) for _ in range(6)]
STATS = [(CLIP_MEAN, CLIP_STD), (HALF, HALF), *RANDOM_STATS]

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
    assert ChannelNorm.search(lut, [recip]).steps is None
    # One flipped bit in one entry is enough to refuse a program.
    bad = lut.copy()
    bad.view(np.uint32)[1, 200] ^= 1
    assert channel_norm_pil(CLIP_MEAN, CLIP_STD).steps is not None
    pil_program = channel_norm_pil(CLIP_MEAN, CLIP_STD).steps
    assert ChannelNorm.search(bad, [pil_program]).steps is None
    assert ChannelNorm.search(lut, [pil_program]).steps is not None


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
    norm = ChannelNorm.search(lut, [[]])
    assert norm.steps == ()
    rgb = every_value_image(32, 32, 1)
    assert np.array_equal(patchify_merged_blocks(rgb, 4, 2, 2, norm), hf_order(rgb, 4, 2, 2, lut))


@pytest.mark.parametrize(("norm_builder", "_"), BUILDERS)
def test_apply_is_the_table_on_either_path(norm_builder, _):
    """``apply`` gives ``lut[c][values]`` bit for bit, by the program and by the gather,
    on strided views (a channel of an HWC image) as the layouts pass them."""
    rgb = every_value_image(48, 32, 3)
    for norm in (norm_builder(CLIP_MEAN, CLIP_STD), ChannelNorm(norm_builder(CLIP_MEAN, CLIP_STD).lut)):
        for c in range(3):
            out = np.empty(rgb.shape[:2], np.float32)
            assert norm.apply(c, rgb[:, :, c], out) is out
            assert out.tobytes() == norm.lut[c][rgb[:, :, c]].tobytes(), (norm.steps is None, c)


V = np.arange(256, dtype=np.float64)
R = 1 / 255


def _per_channel(values, mean, std):
    m, s = (np.asarray(x, dtype=np.float32)[:, None] for x in (mean, std))
    return ((np.broadcast_to(values.astype(np.float32), (3, 256)) - m) / s).astype(np.float32)


# (arithmetic, do_rescale, do_normalize) -> the table transformers computes with that switch off.
STEPS = {
    ("pil", True, False): lambda: np.repeat((V * R).astype(np.float32)[None], 3, axis=0),
    ("pil", False, True): lambda: _per_channel(V, CLIP_MEAN, CLIP_STD),
    ("fused", True, False): lambda: np.repeat((V.astype(np.float32) * np.float32(R))[None], 3, axis=0),
    ("fused", False, True): lambda: normalize_lut_fused(CLIP_MEAN, CLIP_STD, 1.0),
    ("pil", True, True): lambda: normalize_lut_pil(CLIP_MEAN, CLIP_STD, R),
    ("fused", True, True): lambda: normalize_lut_fused(CLIP_MEAN, CLIP_STD, R),
}


@pytest.mark.parametrize(("arithmetic", "rescale", "normalize"), list(STEPS), ids=[str(k) for k in STEPS])
def test_channel_norm_steps_switches_steps_off_like_transformers(arithmetic, rescale, normalize):
    norm = channel_norm_steps(arithmetic, CLIP_MEAN, CLIP_STD, R, do_rescale=rescale, do_normalize=normalize)
    assert norm.lut.tobytes() == STEPS[arithmetic, rescale, normalize]().tobytes()
    out = np.empty((3, 256), dtype=np.float32)
    for c in range(3):
        norm.apply(c, np.arange(256, dtype=np.uint8), out[c])
    assert out.tobytes() == norm.lut.tobytes()


def test_channel_norm_steps_refuses_what_it_cannot_build():
    with pytest.raises(SpecError, match="cannot both be off"):
        channel_norm_steps("pil", HALF, HALF, R, do_rescale=False, do_normalize=False)
    with pytest.raises(InternalError, match="unknown arithmetic 'numpy'"):
        channel_norm_steps("numpy", HALF, HALF, R)


def test_apply_image_is_the_table_in_chw():
    rgb = np.random.default_rng(3).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    norm = channel_norm_pil(CLIP_MEAN, CLIP_STD)
    out = np.empty((3, 37, 53), dtype=np.float32)
    norm.apply_image(rgb, out)
    assert out.tobytes() == norm.lut[np.arange(3)[:, None, None], np.moveaxis(rgb, -1, 0)].tobytes()
