"""The native ATen-uint8 bicubic, bilinear and Lanczos equal the numpy clone (and
torchvision, when importable).

The numpy ``aten_u8``, ``aten_u8_bilinear`` and ``aten_u8_lanczos`` resizers are exact against
torchvision (fixtures of the first two are in tests/kernels/golden; Lanczos is proven by the
torchvision test below and the smolvlm family's torchvision parity); the native kernel (here
through ``resize_rgb`` with the native kernels forced) runs the same per-axis tables through
the C passes (docs/kernels.md, "ATen uint8 antialiased bicubic") and must give the same bytes over a random sweep of
sizes, for any band split and thread count.
"""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import par
from mm_framework.kernels import aten_coeffs, native, resize_rgb
from mm_framework.kernels.aten import resize_aten_u8 as numpy_aten

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")
# resampler -> (its aten filter, torchvision's InterpolationMode name)
ATEN = {"aten_u8": ("bicubic", "BICUBIC"), "aten_u8_bilinear": ("bilinear", "BILINEAR"),
        "aten_u8_lanczos": ("lanczos", "LANCZOS")}
resamplers = pytest.mark.parametrize("resample", list(ATEN))


@pytest.fixture(autouse=True)
def native_mode():
    native.set_mode("native")
    yield
    native.set_mode(None)


def native_aten(img: np.ndarray, out_w: int, out_h: int, resample: str) -> np.ndarray:
    return resize_rgb(img, out_w, out_h, resample)


def _sizes(seed: int, n: int) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(seed)
    # The last two downscale one axis by 80: over 64 taps per output, more tap pairs than
    # the AVX2 body packs ahead.
    sizes = [(1, 1, 3, 2), (1, 9, 4, 1), (9, 1, 1, 4), (17, 13, 17, 40), (17, 13, 5, 13), (960, 1280, 868, 1148),
             (40, 1600, 33, 20), (1600, 40, 20, 33)]
    while len(sizes) < n:
        h, w = (int(v) for v in rng.integers(1, 120, 2))
        scale = rng.choice([0.1, 0.3, 0.7, 0.95, 1.05, 1.6, 3.0])
        oh = max(1, int(h * scale * rng.uniform(0.8, 1.2)))
        ow = max(1, int(w * rng.choice([scale, rng.uniform(0.2, 3.0)])))
        if (oh, ow) != (h, w):
            sizes.append((h, w, oh, ow))
    return sizes


@resamplers
def test_random_sweep_equals_numpy(resample):
    rng = np.random.default_rng(21)
    failures = []
    sizes = _sizes(4, 500)
    for in_h, in_w, out_h, out_w in sizes:
        img = rng.integers(0, 256, (in_h, in_w, 3), dtype=np.uint8)
        img[:: int(rng.integers(2, 7))] = 255
        want = numpy_aten(img, out_w, out_h, ATEN[resample][0])
        if not np.array_equal(native_aten(img, out_w, out_h, resample), want):
            failures.append((in_h, in_w, out_h, out_w))
    assert not failures, f"{len(failures)} of {len(sizes)} differ, first: {failures[:5]}"


@resamplers
def test_tables_drop_only_zero_taps(resample):
    for n_in, n_out in ((1280, 1148), (7, 40), (300, 11), (1, 5)):
        index, weight, precision = aten_coeffs(n_in, n_out, ATEN[resample][0])
        t = native.table_from_taps(index, weight, precision)
        assert t.precision == precision and (t.bounds[:, 0] == index[:, 0]).all()
        for i, (start, count) in enumerate(t.bounds):
            assert (weight[i, count:] == 0).all() and (count == 0 or weight[i, count - 1] != 0)
            assert start + count <= n_in


@resamplers
@pytest.mark.parametrize("mode", ["inline", 1, 2, 4])
def test_thread_count_independent(mode, resample):
    rng = np.random.default_rng(8)
    img = rng.integers(0, 256, (640, 700, 3), dtype=np.uint8)
    want = numpy_aten(img, 577, 512, ATEN[resample][0])
    par.set_threads(mode)
    try:
        got = native_aten(img, 577, 512, resample)
    finally:
        par.set_threads(None)
    assert np.array_equal(got, want)


@resamplers
@pytest.mark.torch_parity
def test_equals_torchvision(resample):
    torch = pytest.importorskip("torch")
    tvf = pytest.importorskip("torchvision.transforms.v2.functional")
    geometry = pytest.importorskip("torchvision.transforms.v2.functional._geometry")
    filt, mode = ATEN[resample]
    # torchvision's own test of whether ATen's uint8 kernel runs (else it resizes in float32).
    if filt == "bilinear" and not geometry._do_native_uint8_resize_on_cpu(tvf.InterpolationMode.BILINEAR):
        pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU, not ATen's uint8 path")
    rng = np.random.default_rng(9)
    torch.set_num_threads(1)
    for in_h, in_w, out_h, out_w in _sizes(5, 300 if filt == "bilinear" else 120):
        if filt == "bilinear" and (out_h, out_w) == (1, 1) and in_h > 1:
            # torch 2.14's AVX uint8 bilinear fails an internal assert there
            # (UpSampleKernelAVXAntialias.h:269): no reference bytes to compare.
            continue
        img = rng.integers(0, 256, (in_h, in_w, 3), dtype=np.uint8)
        chw = torch.from_numpy(img).permute(2, 0, 1).contiguous()
        want = tvf.resize(chw, [out_h, out_w], interpolation=tvf.InterpolationMode[mode], antialias=True)
        want = want.permute(1, 2, 0).numpy()
        assert np.array_equal(numpy_aten(img, out_w, out_h, filt), want), ("numpy", in_h, in_w, out_h, out_w)
        assert np.array_equal(native_aten(img, out_w, out_h, resample), want), (in_h, in_w, out_h, out_w)
