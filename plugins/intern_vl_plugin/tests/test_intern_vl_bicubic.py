"""The float bicubic kernel without torch: pinned torch weights, an exact FMA, a float64 oracle.

The oracle is the docs/families/intern_vl.md formula evaluated per output pixel in float64 (no
separable trick, no float32 rounding); the kernel must agree with it far inside the
parity tolerance. Bit-level agreement with torch is pinned through weight bit patterns
read from torch 2.13 (AVX2) and checked live by ``test_intern_vl_torch_parity.py``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from intern_vl_plugin.bicubic import _fma, axis_weights, resize_to_tiles
from mm_framework import par

# (in, out, output index, first input index, torch's four weights as float32 bits). Each
# row differs from a naive float32 evaluation of the weights (no FMA) in at least one bit.
TORCH_WEIGHT_BITS = [
    (100, 96, 3, 2, (0xBDA36E40, 0x3F74BE14, 0x3E0CB25C, 0xBC5F3800)),
    (100, 96, 15, 14, (0xBD78DC80, 0x3ECBE6DE, 0x3F45F73C, 0xBDE2E720)),
    (100, 96, 50, 51, (0xBD806680, 0x3F7A1CAA, 0x3DBE6F38, 0xBBEEE000)),
    (53, 448, 13, 0, (0xBD732C40, 0x3F7ADCC5, 0x3DAFC320, 0xBBD13200)),
    (53, 448, 200, 22, (0xBDCD8940, 0x3F678E86, 0x3E658110, 0xBCE7B480)),
    (640, 1792, 5, 0, (0xBDCCAA60, 0x3F23DCEC, 0x3F0BE462, 0xBDB16020)),
    (640, 1792, 1000, 355, (0xBCA0E980, 0x3E32D174, 0x3F6F7504, 0xBDB910C0)),
]


@pytest.mark.parametrize("n_in, n_out, o, first, bits", TORCH_WEIGHT_BITS)
def test_weights_are_torchs_bit_for_bit(n_in, n_out, o, first, bits):
    ax = axis_weights(n_in, n_out)
    assert ax.index[:, o].tolist() == [first, first + 1, first + 2, first + 3]
    assert [hex(b) for b in ax.weight[:, o].view(np.uint32).tolist()] == [hex(b) for b in bits]


def test_identity_axis_has_unit_weights():
    ax = axis_weights(37, 37)
    assert ax.identity
    assert (ax.weight == np.array([[0], [1], [0], [0]], dtype=np.float32)).all()
    assert (ax.index[1] == np.arange(37)).all()


def test_border_taps_are_clamped():
    ax = axis_weights(5, 17)
    assert ax.index.min() == 0 and ax.index.max() == 4
    assert not axis_weights(5, 17).identity


def test_fma_is_correctly_rounded():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4000).astype(np.float32)
    b = rng.standard_normal(4000).astype(np.float32)
    c = (rng.standard_normal(4000) * 10.0 ** rng.integers(-8, 3, 4000)).astype(np.float32)
    # Include exact cancellations and products far smaller than the addend.
    c[:100] = -(a[:100].astype(np.float64) * b[:100]).astype(np.float32)
    c[100:200] = np.float32(1e6)
    got = _fma(a, b, c)
    for x, y, z, g in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist()):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        rounded = np.float32(float(exact))  # float() rounds once, to the nearest float64
        # Guard against double rounding in the oracle itself: compare neighbours exactly.
        candidates = [rounded, np.nextafter(rounded, np.float32(np.inf)), np.nextafter(rounded, np.float32(-np.inf))]
        best = min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(np.int32)) & 1))
        assert g == best, (x, y, z)


def _oracle(image: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """docs/families/intern_vl.md per output pixel (vectorized over pixels), weights and sums in float64.

    Source positions are float32 as torch computes them: the float32 ``scale``, then
    ``scale * (o + 0.5) - 0.5`` rounded once (exact in float64 before that rounding).
    Their rounding moves a position by up to ~1e-5 pixel when downscaling 12x, which an
    exact-position oracle would count as a ~1e-4 difference on noise images.
    """
    a = -0.75

    def cc1(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def cc2(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def taps(n_in, n_out):
        scale = np.float64(np.float32(n_in) / np.float32(n_out))
        src = (scale * (np.arange(n_out) + 0.5) - 0.5).astype(np.float32).astype(np.float64)
        i = np.floor(src)
        t = src - i
        w = np.stack([cc2(t + 1), cc1(t), cc1(1 - t), cc2(2 - t)])
        idx = np.clip(i.astype(np.int64)[None] + np.arange(-1, 3)[:, None], 0, n_in - 1)
        return idx, w

    iy, wy = taps(image.shape[1], out_h)
    ix, wx = taps(image.shape[2], out_w)
    img = image.astype(np.float64)
    out = np.zeros((image.shape[0], out_h, out_w))
    for j in range(4):
        for k in range(4):
            out += wy[j][:, None] * wx[k][None, :] * img[:, iy[j]][:, :, ix[k]]
    return out


def _tiles_of(full: np.ndarray, cols: int, rows: int, size: int) -> np.ndarray:
    c = full.shape[0]
    return full.reshape(c, rows, size, cols, size).transpose(1, 3, 0, 2, 4).reshape(rows * cols, c, size, size)


@pytest.mark.parametrize(
    "h, w, cols, rows, size",
    [
        (21, 33, 3, 2, 16),
        (100, 40, 2, 5, 16),
        (1, 1, 3, 3, 8),
        (1, 9, 4, 1, 8),
        (64, 32, 2, 4, 16),  # both axes identity
        (300, 200, 1, 1, 24),  # 12x downscale
    ],
)
def test_matches_float64_oracle(h, w, cols, rows, size):
    image = np.random.default_rng(h * w).standard_normal((3, h, w)).astype(np.float32) * 2
    out = np.empty((rows * cols, 3, size, size), dtype=np.float32)
    resize_to_tiles(image, cols, rows, size, out)
    want = _tiles_of(_oracle(image, rows * size, cols * size), cols, rows, size)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=2e-6)


def test_identity_resize_copies_the_input():
    image = np.random.default_rng(0).standard_normal((3, 32, 48)).astype(np.float32)
    out = np.empty((6, 3, 16, 16), dtype=np.float32)
    resize_to_tiles(image, 3, 2, 16, out)
    assert np.array_equal(out, _tiles_of(image, 3, 2, 16))


@pytest.fixture
def _restore_threads():
    yield
    par.set_threads(None)


@pytest.mark.usefixtures("_restore_threads")
def test_windows_split_inside_tiles_identically_inline_and_on_the_pool():
    # 48-pixel tiles, 192 output columns: 341-row windows, so window edges fall inside
    # a tile's rows and the row loop must split where the destination slab changes.
    image = np.random.default_rng(1).standard_normal((3, 300, 500)).astype(np.float32)
    outs = []
    for mode in ("inline", 2):
        par.set_threads(mode)
        out = np.empty((12, 3, 48, 48), dtype=np.float32)
        resize_to_tiles(image, 4, 3, 48, out)
        outs.append(out)
    assert outs[0].tobytes() == outs[1].tobytes()
    np.testing.assert_allclose(outs[0], _tiles_of(_oracle(image, 144, 192), 4, 3, 48), rtol=1e-6, atol=2e-6)


def test_rejects_a_non_contiguous_destination():
    image = np.zeros((3, 4, 4), dtype=np.float32)
    out = np.empty((2, 3, 8, 8), dtype=np.float32)[:, :, :, ::2]
    with pytest.raises(ValueError, match="contiguous"):
        resize_to_tiles(image, 2, 1, 4, out)
