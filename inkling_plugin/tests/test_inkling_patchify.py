"""Patch layout and values against the independent reference, plus the seed's bit pins."""

from __future__ import annotations

import numpy as np
import pytest

import inkling_plugin as inkling
from inkling_plugin import patchify as patchify_mod
from .inkling_reference import bf16_round_bits, ref_patchify
from mm_framework import par


@pytest.fixture
def threads():
    yield par.set_threads
    par.set_threads(None)


def test_pad_and_extreme_value_pins():
    assert inkling.PAD_BITS.tolist() == [0xBFE7, 0xBFE2, 0xBFBF]
    assert inkling.LUT[:, 0].tolist() == [0xBFE5, 0xBFE0, 0xBFBD]
    assert inkling.LUT[:, 255].tolist() == [0x3FF7, 0x4005, 0x4009]


def test_values_of_a_flat_image():
    for v, want in [(0, [0xBFE5, 0xBFE0, 0xBFBD]), (255, [0x3FF7, 0x4005, 0x4009])]:
        bits = inkling.patchify_rgb(np.full((40, 40, 3), v, dtype=np.uint8), 40)
        assert bits.shape == (2, 40, 40, 3)
        assert (bits[0] == np.array(want, dtype=np.uint16)).all()
        assert (bits[1] == inkling.PAD_BITS).all()


@pytest.mark.parametrize("w", [40, 80, 120])
def test_extra_padded_column_when_width_is_a_multiple(w):
    arr = np.random.default_rng(w).integers(0, 256, size=(80, w, 3), dtype=np.uint8)
    bits = inkling.patchify_rgb(arr, 40)
    nph, npw = 2, w // 40 + 1
    assert bits.shape == (nph * npw, 40, 40, 3)
    grid = bits.reshape(nph, npw, 40, 40, 3)
    assert (grid[:, -1] == inkling.PAD_BITS).all()
    assert not (grid[:, :-1] == inkling.PAD_BITS).all(axis=-1).any()


def test_rows_pad_only_up_to_the_next_multiple():
    arr = np.zeros((41, 10, 3), dtype=np.uint8)
    bits = inkling.patchify_rgb(arr, 40).reshape(2, 1, 40, 40, 3)
    assert (bits[1, 0, 1:] == inkling.PAD_BITS).all()
    assert (bits[1, 0, 0, :10] == inkling.LUT[:, 0]).all() and (bits[1, 0, 0, 10:] == inkling.PAD_BITS).all()


def test_seed_grid_example():
    assert inkling.patch_grid(34, 50, 16) == (3, 4)
    assert inkling.patchify_rgb(np.zeros((34, 50, 3), np.uint8), 16).shape == (12, 16, 16, 3)


def test_layout_is_patch_major_hwc():
    h, w, ps = 5, 7, 2
    arr = np.random.default_rng(3).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    bits = inkling.patchify_rgb(arr, ps)
    npw = w // ps + 1
    for k in range(bits.shape[0]):
        i, j = divmod(k, npw)
        for y in range(ps):
            for x in range(ps):
                iy, ix = i * ps + y, j * ps + x
                want = inkling.LUT[np.arange(3), arr[iy, ix]] if iy < h and ix < w else inkling.PAD_BITS
                assert bits[k, y, x].tolist() == want.tolist(), (k, y, x)


SIZES = [(1, 1), (2, 3), (37, 53), (40, 40), (41, 39), (80, 79), (81, 120), (3, 200), (200, 3), (97, 161)]


@pytest.mark.parametrize("ps", [1, 2, 3, 7, 14, 15, 16, 40])
def test_random_arrays_match_reference(ps):
    rng = np.random.default_rng(ps)
    for h, w in SIZES:
        arr = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        got = inkling.patchify_rgb(arr, ps)
        assert np.array_equal(got, ref_patchify(arr, ps)), (ps, h, w)


@pytest.mark.parametrize("h,w", [(1080, 1920), (1920, 1080), (720, 1280), (1, 1), (37, 53), (40, 40)])
def test_seed_parity_sizes(h, w):
    arr = np.random.default_rng(42).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    assert np.array_equal(inkling.patchify_rgb(arr, 40), ref_patchify(arr, 40))


@pytest.mark.parametrize("mode", ["inline", 1, 4])
@pytest.mark.parametrize("ps", [16, 15])
def test_bands_and_threads_are_invisible(threads, monkeypatch, mode, ps):
    # Tiny bands force many band boundaries, including a partial last patch row.
    monkeypatch.setattr(patchify_mod, "_BAND_VALUES", 1)
    monkeypatch.setattr(par, "_PAR_MIN_PIXELS", 1)
    threads(mode)
    arr = np.random.default_rng(5).integers(0, 256, size=(203, 149, 3), dtype=np.uint8)
    assert np.array_equal(inkling.patchify_rgb(arr, ps), ref_patchify(arr, ps))


def test_readonly_input_is_accepted():
    arr = np.random.default_rng(6).integers(0, 256, size=(50, 60, 3), dtype=np.uint8)
    arr.flags.writeable = False
    assert np.array_equal(inkling.patchify_rgb(arr, 40), ref_patchify(arr, 40))


def test_bf16_rounding_matches_the_reference_rounding():
    rng = np.random.default_rng(7)
    x = rng.standard_normal(200_000).astype(np.float32) * np.float32(3)
    # Exact ties: a bf16 value plus half an ulp (low 16 bits 0x8000), both parities.
    ties = (rng.integers(0x3F000000, 0x40800000, 10_000, dtype=np.uint32) & 0xFFFF0000) | 0x8000
    x = np.concatenate([x, ties.view(np.float32), -ties.view(np.float32), np.float32([0, -0.0, 1, -1])])
    assert np.array_equal(inkling.bf16_bits(x), bf16_round_bits(x))
