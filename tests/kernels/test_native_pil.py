"""The native Pillow resizers are byte-identical to the installed Pillow 13.

RGB goes through the toolkit's ``resize_rgb`` with the native kernels forced (so the
dispatch, the cached tables and the pass-order choice are tested too); L images, which
``resize_rgb`` does not take, through the same tables and passes of the native face.

Over 1,000 random (source, target) size pairs per filter (upscales, downscales, mixed,
single-pass, both of Pillow 13's pass orders and the order rule's boundary
``dh == 2*dw`` / ``dh == 2*dw + 1``, 1-pixel, 1xN and Nx1 images, odd widths), each pair
in RGB or L, compared with ``Image.resize(..., reducing_gap=None)``; plus band and
thread-count independence of the passes. Contracts: docs/kernels.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from mm_framework import par
from mm_framework.kernels import native, pil_vertical_first, resize_rgb

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")

FILTERS = {
    "bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC, "lanczos": Image.Resampling.LANCZOS,
}
PAIRS_PER_FILTER = 1100


def _image(rng: np.random.Generator, h: int, w: int, channels: int) -> np.ndarray:
    img = rng.integers(0, 256, (h, w, channels) if channels == 3 else (h, w), dtype=np.uint8)
    if rng.random() < 0.5:  # saturated lines drive the clip at both ends
        img[:: int(rng.integers(2, 6))] = 255
        img[:, :: int(rng.integers(2, 6))] = 0
    return img


def _pair(rng: np.random.Generator, kind: int) -> tuple[int, int, int, int]:
    """(in_h, in_w, out_h, out_w) of one of several families of sizes."""
    r = lambda a, b: int(rng.integers(a, b + 1))  # noqa: E731
    if kind == 0:  # small, anything goes
        return r(1, 40), r(1, 40), r(1, 40), r(1, 40)
    if kind == 1:  # upscale
        h, w = r(1, 30), r(1, 30)
        return h, w, h * r(1, 4) + r(0, 3), w * r(1, 4) + r(0, 3)
    if kind == 2:  # downscale, up to 12x
        h, w = r(8, 160), r(8, 160)
        return h, w, max(1, h // r(1, 12)), max(1, w // r(1, 12))
    if kind == 3:  # the order rule's boundary: dh == 2*dw or 2*dw + 1, dh > 0
        dw = r(-6, 12)
        dh = max(1, 2 * dw + r(0, 1))
        out_h, out_w = r(1, 40), r(max(1, 1 - dw), 40)
        return out_h + dh, out_w + dw, out_h, out_w
    if kind == 4:  # one axis unchanged: a single pass
        h, w = r(1, 60), r(1, 60)
        return (h, w, h, r(1, 80)) if rng.random() < 0.5 else (h, w, r(1, 80), w)
    if kind == 5:  # 1-pixel and 1xN / Nx1 sources and targets
        n = r(1, 90)
        return [(1, 1, r(1, 9), r(1, 9)), (1, n, r(1, 5), r(1, 90)), (n, 1, r(1, 90), r(1, 5)),
                (r(1, 40), r(1, 40), 1, r(1, 9)), (r(1, 40), r(1, 40), r(1, 9), 1)][r(0, 4)]
    h, w = r(40, 200), r(40, 200)  # near-1 scales on larger images
    return h, w, max(1, h + r(-9, 9)), max(1, w + r(-9, 9))


def _pairs(seed: int) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(seed)
    pairs = [(1, 1, 1, 2), (1, 1, 2, 1), (2, 1, 1, 1), (1, 2, 1, 1), (1, 7, 1, 3), (7, 1, 3, 1),
             (60, 40, 50, 35), (60, 40, 51, 35), (60, 40, 49, 35), (48, 64, 47, 65), (64, 48, 66, 47),
             (960, 1280, 868, 1148)]
    while len(pairs) < PAIRS_PER_FILTER:
        pair = _pair(rng, int(rng.integers(0, 7)))
        if pair[:2] != pair[2:]:
            pairs.append(pair)
    return pairs


@pytest.fixture(autouse=True)
def native_mode():
    native.set_mode("native")
    yield
    native.set_mode(None)


def native_pil(img: np.ndarray, out_w: int, out_h: int, filt: str) -> np.ndarray:
    if img.ndim == 3:
        return resize_rgb(img, out_w, out_h, f"pil_{filt}")
    in_h, in_w = img.shape[:2]
    h = native.pil_table(in_w, out_w, filt) if out_w != in_w else None
    v = native.pil_table(in_h, out_h, filt) if out_h != in_h else None
    return native.resize(img, h, v, pil_vertical_first(in_w, in_h, out_w, out_h))


def _pillow(img: np.ndarray, out_w: int, out_h: int, filt: str) -> np.ndarray:
    return np.asarray(Image.fromarray(img).resize((out_w, out_h), FILTERS[filt], reducing_gap=None))


@pytest.mark.parametrize("filt", list(FILTERS))
def test_random_size_pairs_equal_pillow(filt):
    rng = np.random.default_rng(7)
    pairs = _pairs(list(FILTERS).index(filt))
    failures, orders, modes = [], set(), set()
    for in_h, in_w, out_h, out_w in pairs:
        channels = 3 if rng.random() < 0.6 else 1
        img = _image(rng, in_h, in_w, channels)
        got = native_pil(img, out_w, out_h, filt)
        want = _pillow(img, out_w, out_h, filt)
        if got.shape != want.shape or not np.array_equal(got, want):
            failures.append((in_h, in_w, out_h, out_w, channels))
        orders.add(pil_vertical_first(in_w, in_h, out_w, out_h) and out_w != in_w)
        modes.add(channels)
    assert not failures, f"{len(failures)} of {len(pairs)} differ from Pillow, first: {failures[:5]}"
    assert len(pairs) >= 1000 and orders == {True, False} and modes == {1, 3}


@pytest.mark.parametrize("filt", list(FILTERS))
def test_order_rule_boundary(filt):
    # dh == 2*dw runs horizontal first, dh == 2*dw + 1 vertical first; each order's result
    # must be Pillow's, and on these sizes the other order would give other bytes.
    rng = np.random.default_rng(11)
    for dw in (1, 3, 8):
        for extra, vertical_first in ((0, False), (1, True)):
            out_h, out_w = 37, 29
            in_h, in_w = out_h + 2 * dw + extra, out_w + dw
            assert pil_vertical_first(in_w, in_h, out_w, out_h) is vertical_first
            img = _image(rng, in_h, in_w, 3)
            got = native_pil(img, out_w, out_h, filt)
            assert np.array_equal(got, _pillow(img, out_w, out_h, filt))
            h, v = native.pil_table(in_w, out_w, filt), native.pil_table(in_h, out_h, filt)
            assert not np.array_equal(got, native.resize(img, h, v, not vertical_first))


def test_unchanged_size_is_a_copy():
    img = _image(np.random.default_rng(1), 5, 7, 3)
    out = native.resize(img, None, None, False)
    assert np.array_equal(out, img) and not np.shares_memory(out, img)


def test_strided_views_are_accepted():
    rng = np.random.default_rng(2)
    base = _image(rng, 50, 90, 3)
    for view in (base[::2], base[:, ::3], base[5:40, 7:80], base[::-1]):
        want = _pillow(np.ascontiguousarray(view), 33, 21, "bicubic")
        assert np.array_equal(native_pil(view, 33, 21, "bicubic"), want)


@pytest.mark.parametrize("channels", [1, 3])
def test_passes_are_band_independent(channels):
    # Any split of a pass into bands of destination rows gives the bytes of one call.
    rng = np.random.default_rng(5)
    img = _image(rng, 75, 83, channels)
    for axis, (n_in, n_out) in (("h", (83, 61)), ("v", (75, 40))):
        t = native.pil_table(n_in, n_out, "lanczos")
        shape = (75, n_out) if axis == "h" else (n_out, 83)
        shape += (3,) if channels == 3 else ()
        fn = native._native.resample_horizontal if axis == "h" else native._native.resample_vertical
        whole = np.empty(shape, np.uint8)
        fn(img, whole, t.bounds, t.weights, t.precision, 0, shape[0])
        banded = np.zeros(shape, np.uint8)
        edges = sorted({0, shape[0], *(int(e) for e in rng.integers(0, shape[0], 6))})
        for lo, hi in zip(edges, edges[1:]):
            fn(img, banded, t.bounds, t.weights, t.precision, lo, hi)
        assert np.array_equal(whole, banded)


@pytest.mark.parametrize("mode", ["inline", 1, 2, 4])
def test_thread_count_independent(mode):
    # Large enough (> 2^18 pixels) for the face to split both passes over the pool.
    rng = np.random.default_rng(3)
    img = _image(rng, 700, 600, 3)
    want = _pillow(img, 523, 640, "bicubic")
    par.set_threads(mode)
    try:
        got = native_pil(img, 523, 640, "bicubic")
    finally:
        par.set_threads(None)
    assert np.array_equal(got, want)
