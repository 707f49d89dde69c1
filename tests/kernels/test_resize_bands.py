"""Band-split Pillow resizes and the single-pass RGB export are byte-identical to Pillow.

``mm_framework.resize`` may split a Pillow resize into per-pass bands on the fan-out
seam (rows for the horizontal pass, columns for the vertical one, in Pillow 13's pass
order). These tests compare every split against one plain ``Image.resize`` of the real
installed Pillow, over many sizes: down, up and mixed scales, both pass orders, the
boundary of Pillow 13's order rule, single-pass resizes, thin images and ragged band
counts. The band split is the portable path, so these tests run with the portable
kernels (the native resizers are tested in test_native_pil.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from mm_framework import par

from mm_framework.kernels import native, resize
from mm_framework.media.decode import rgb_array
from mm_framework.kernels import pil_vertical_first, resize_rgb

FILTERS = {
    "pil_bicubic": Image.Resampling.BICUBIC,
    "pil_lanczos": Image.Resampling.LANCZOS,
    "pil_bilinear": Image.Resampling.BILINEAR,
}


@pytest.fixture(autouse=True)
def portable_kernels():
    native.set_mode("portable")
    yield
    native.set_mode(None)


def _image(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    img[::7] = 255  # saturated rows and columns drive the clip paths
    img[:, ::5] = 0
    return img


def _pillow(rgb: np.ndarray, out_w: int, out_h: int, resample: str) -> np.ndarray:
    return np.asarray(Image.fromarray(rgb).resize((out_w, out_h), FILTERS[resample], reducing_gap=None))


def _sizes() -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(77)
    sizes = [
        (48, 64, 47, 65), (64, 48, 66, 47), (60, 40, 50, 35), (60, 40, 51, 35), (60, 40, 49, 35),  # order boundary
        (60, 40, 40, 30), (60, 40, 39, 30), (60, 40, 41, 30), (40, 60, 30, 40), (96, 128, 84, 112),
        (30, 80, 90, 240), (80, 30, 12, 5), (3, 200, 5, 190), (200, 3, 190, 5), (1, 50, 3, 40), (50, 1, 40, 3),
        (64, 48, 64, 30), (64, 48, 64, 100), (64, 48, 20, 48), (64, 48, 130, 48),  # single pass
        (37, 53, 74, 106), (101, 77, 13, 11), (33, 33, 34, 32), (128, 96, 120, 100),
    ]
    for _ in range(24):
        h, w = (int(v) for v in rng.integers(2, 120, 2))
        oh, ow = (int(v) for v in rng.integers(1, 140, 2))
        sizes.append((h, w, oh, ow))
    return sizes


@pytest.fixture(params=[2, 3], ids=["pool2", "pool3"])
def pool(request):
    par.set_threads(request.param)
    yield request.param
    par.set_threads(None)


@pytest.mark.parametrize("resample", list(FILTERS))
@pytest.mark.parametrize("size", _sizes(), ids=lambda s: "{}x{}-{}x{}".format(*s))
def test_band_split_equals_one_pillow_resize(size, resample, pool):
    h, w, oh, ow = size
    src = _image(h, w, h * 131 + w)
    want = _pillow(src, ow, oh, resample)
    for bands in (2, 3, 5):
        got = resize._resize_pil_bands(src, ow, oh, FILTERS[resample], bands)
        assert got.shape == want.shape and np.array_equal(got, want), bands


def test_both_pass_orders_are_covered():
    orders = {pil_vertical_first(w, h, ow, oh) for h, w, oh, ow in _sizes() if h != oh and w != ow}
    assert orders == {True, False}


def test_pass_order_is_load_bearing():
    # 48x64 -> 47x65 runs vertical first; the horizontal-first result differs, so a split
    # with the wrong order could not pass the comparison above.
    src = _image(48, 64, 1)
    assert pil_vertical_first(64, 48, 65, 47)
    h_first = _pillow(_pillow(src, 65, 48, "pil_bicubic"), 65, 47, "pil_bicubic")
    assert not np.array_equal(h_first, _pillow(src, 65, 47, "pil_bicubic"))


@pytest.mark.parametrize("threads", ["inline", 1, 2])
def test_resize_rgb_dispatch_is_byte_identical(monkeypatch, threads):
    """With the size threshold lowered, resize_rgb takes the band path on a pool, not inline."""
    monkeypatch.setattr(resize, "_BAND_MIN_PIXELS", 0)
    calls = []
    real = resize._resize_pil_bands

    def spy(rgb, out_w, out_h, filt, bands, source=None):
        calls.append(bands)
        return real(rgb, out_w, out_h, filt, bands, source)

    monkeypatch.setattr(resize, "_resize_pil_bands", spy)
    par.set_threads(threads)
    try:
        src = _image(90, 120, 5)[:, 3:117]  # not C-contiguous
        got = resize_rgb(src, 100, 70, "pil_bicubic")
    finally:
        par.set_threads(None)
    assert np.array_equal(got, _pillow(np.ascontiguousarray(src), 100, 70, "pil_bicubic"))
    assert calls == ([2] if threads == 2 else [])


def test_band_split_runs_inline_on_a_pool_worker(monkeypatch):
    """An item already on a pool thread must not fan out again (no nested pool use)."""
    monkeypatch.setattr(resize, "_BAND_MIN_PIXELS", 0)
    monkeypatch.setattr(resize, "_resize_pil_bands", lambda *a: pytest.fail("split on a worker"))
    par.set_threads(2)
    try:
        src = _image(40, 50, 9)
        outs = par.try_map(lambda i, s: resize_rgb(s, 30, 20, "pil_lanczos"), [src, src])
    finally:
        par.set_threads(None)
    want = _pillow(src, 30, 20, "pil_lanczos")
    assert all(np.array_equal(o, want) for o in outs)


@pytest.mark.parametrize("threads", ["inline", 2])
@pytest.mark.parametrize("resample", list(FILTERS))
@pytest.mark.parametrize("size", [(48, 64, 47, 65), (60, 40, 50, 35), (64, 48, 64, 30), (64, 48, 20, 48)],
                         ids=lambda s: "{}x{}-{}x{}".format(*s))
def test_lent_source_gives_the_same_bytes(monkeypatch, size, resample, threads):
    """Starting from the decoder's Pillow image (whole or as band crops) changes nothing."""
    monkeypatch.setattr(resize, "_BAND_MIN_PIXELS", 0)
    h, w, oh, ow = size
    src = _image(h, w, 3)
    want = _pillow(src, ow, oh, resample)
    par.set_threads(threads)
    try:
        got = resize_rgb(src, ow, oh, resample, source=Image.fromarray(src))
    finally:
        par.set_threads(None)
    assert np.array_equal(got, want)


def test_mismatched_source_is_ignored():
    src = _image(40, 50, 4)
    other = Image.fromarray(_image(40, 51, 5))
    assert np.array_equal(resize_rgb(src, 30, 20, "pil_bicubic", source=other), _pillow(src, 30, 20, "pil_bicubic"))
    grey = Image.fromarray(src).convert("L")
    assert np.array_equal(resize_rgb(src, 30, 20, "pil_bicubic", source=grey), _pillow(src, 30, 20, "pil_bicubic"))


@pytest.mark.parametrize(("h", "w"), [(1, 1), (1, 3000), (3000, 1), (17, 23), (480, 640)])
def test_rgb_array_equals_numpy_export(h, w):
    im = Image.fromarray(_image(h, w, h + w))
    got = rgb_array(im)
    assert got.shape == (h, w, 3) and got.dtype == np.uint8 and not got.flags.writeable
    assert np.array_equal(got, np.asarray(im))


def test_rgb_array_other_modes_fall_back_to_numpy():
    im = Image.fromarray(_image(5, 6, 1)).convert("L")
    assert np.array_equal(rgb_array(im), np.asarray(im))
