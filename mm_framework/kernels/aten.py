"""``"aten_u8"`` / ``"aten_u8_bilinear"`` / ``"aten_u8_lanczos"``: ATen's uint8 antialiased
bicubic, bilinear and Lanczos (the torchvision backend), in numpy.

The three differ only in the filter and its support (``interp_size`` 4, 2 and 6). ATen computes per-axis int16
fixed-point tap tables in f64 and runs two separable integer passes, horizontal first,
with a uint8 image in between (docs/architecture.md, "Resize: ATen uint8"). Integer math
is exact, so the order of a sum is free and bands of output rows are independent.
"""

from __future__ import annotations

import math

import numpy as np

from .. import par

_KEYS_A = -0.5  # ATen uses Keys' a = -0.5 when antialias=True (Pillow compatible)


def _aten_bicubic(x: np.ndarray) -> np.ndarray:
    """ATen ``HelperInterpCubic::aa_filter`` with ATen's own evaluation order.

    The outer branch is written as ``((A*x - 5A)*x + 8A)*x - 4A`` (``cubic_convolution2``),
    not Pillow's ``(((x-5)*x + 8)*x - 4)*a``; the two can differ in the last bit.
    """
    a = _KEYS_A
    x = np.abs(x)
    inner = (((a + 2.0) * x - (a + 3.0)) * x) * x + 1.0
    outer = ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    return np.where(x < 1.0, inner, np.where(x < 2.0, outer, 0.0))


def _aten_triangle(x: np.ndarray) -> np.ndarray:
    """ATen ``HelperInterpLinear::aa_filter``: ``1 - |x|`` inside the unit, else 0."""
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _sinc(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        px = x * math.pi
        return np.where(x == 0.0, 1.0, np.sin(px) / px)


def _aten_lanczos(x: np.ndarray) -> np.ndarray:
    """ATen's Lanczos-3 ``aa_filter`` (``_upsample_lanczos2d_aa``, which torchvision >= 0.27
    runs for ``LANCZOS``), Pillow's formula: ``sinc(x) * sinc(x / 3)`` on ``[-3, 3)`` with
    ``sinc(x) = sin(pi x) / (pi x)``."""
    return np.where((x >= -3.0) & (x < 3.0), _sinc(x) * _sinc(x / 3.0), 0.0)


# filter name -> (aa_filter, interp_size): the support is interp_size / 2 source pixels,
# widened by the scale when downsampling.
FILTERS = {"bicubic": (_aten_bicubic, 4), "bilinear": (_aten_triangle, 2), "lanczos": (_aten_lanczos, 6)}


def aten_coeffs(in_size: int, out_size: int, filt: str = "bicubic") -> tuple[np.ndarray, np.ndarray, int]:
    """Per-axis tap table of ATen's uint8 antialiased ``filt`` (a :data:`FILTERS` name):
    ``(index, weight, precision)``.

    ``index`` is ``[out_size, ksize]`` int64 source positions (clamped in range; taps past
    an output's span carry weight 0), ``weight`` the matching int32 fixed-point weights
    (int16 range) and ``precision`` the per-axis fraction bits of
    ``_compute_weights_precision``: the largest ``P <= 22`` with
    ``int(0.5 + wmax*2^P) < 2^15``, ``wmax`` being the largest normalised weight of the axis.
    All geometry is f64 in ATen's operation order.
    """
    aa_filter, interp_size = FILTERS[filt]
    scale = in_size / out_size
    support = (interp_size * 0.5) * scale if scale >= 1.0 else interp_size * 0.5
    ksize = math.ceil(support) * 2 + 1
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    center = scale * (np.arange(out_size, dtype=np.float64) + 0.5)
    # static_cast<int64_t> truncates toward zero.
    xmin = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    xsize = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), in_size) - xmin
    xsize = np.clip(xsize, 0, ksize)
    taps = np.arange(ksize, dtype=np.int64)
    live = taps[None, :] < xsize[:, None]
    pos = xmin[:, None] + taps[None, :]
    w = np.where(live, aa_filter(((pos.astype(np.float64) - center[:, None]) + 0.5) * invscale), 0.0)
    # total_w accumulates tap by tap in order: a numpy sum could pair terms differently.
    total = np.zeros(out_size, dtype=np.float64)
    for j in range(ksize):
        total += w[:, j]
    nz = total != 0.0
    w[nz] /= total[nz, None]
    # Like ATen, only normalised rows count (and wmax starts at 0).
    wmax = max(0.0, float(w[nz].max())) if nz.any() else 0.0
    precision = 0
    while precision < 22 and int(0.5 + wmax * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    v = w * float(1 << precision)
    k = np.where(v < 0, np.trunc(v - 0.5), np.trunc(v + 0.5)).astype(np.int32)
    return np.minimum(pos, in_size - 1), k, precision


def _aten_rows(src: np.ndarray, out_rows: int, filt: str) -> np.ndarray:
    """One separable uint8 pass over the rows of ``src`` (``[n_in, L]`` u8, rows of pixels).

    Integer math only, as ATen: each output byte is ``clip8((2^(P-1) + sum_j row_j*k_j) >> P)``
    with the taps of :func:`aten_coeffs`, accumulated in int32 (exact, so the order of
    the sum is free). Per band of output rows and tap: one gather of whole source rows
    (a memcpy each), one multiply by that tap's per-row weights, one add; taps whose
    weights are all zero in the band are skipped. Bands are independent and fan out on
    :func:`mm_framework.par.for_chunks` with byte-identical results.
    """
    n_in, width = src.shape
    index, weight, precision = aten_coeffs(n_in, out_rows, filt)
    out = np.empty((out_rows, width), dtype=np.uint8)
    band = max(1, _BAND_BYTES // (4 * width))
    bias = np.int32(1 << (precision - 1))

    def run(start: int, stop: int) -> None:
        n = min(band, stop - start)
        acc = np.empty((n, width), dtype=np.int32)
        tmp = np.empty((n, width), dtype=np.int32)
        rows = np.empty((n, width), dtype=np.uint8)
        for a in range(start, stop, band):
            b = min(stop, a + band)
            acc_, tmp_, rows_ = acc[: b - a], tmp[: b - a], rows[: b - a]
            first = True
            for j in range(index.shape[1]):
                kj = weight[a:b, j]
                if not kj.any():
                    continue
                np.take(src, index[a:b, j], axis=0, out=rows_)
                np.multiply(rows_, kj[:, None], out=acc_ if first else tmp_)
                if not first:
                    np.add(acc_, tmp_, out=acc_)
                first = False
            np.add(acc_, bias, out=acc_)
            np.right_shift(acc_, precision, out=acc_)
            np.clip(acc_, 0, 255, out=out[a:b], casting="unsafe")

    par.for_chunks(run, out_rows, par.rows_per_worker(out_rows, out_rows * width // 3))
    return out


def _to_planar_columns(rgb: np.ndarray) -> np.ndarray:
    """``[w, 3, h]`` C-contiguous: row ``x`` holds column ``x`` of the image, channel-major.

    A row pass does not care how a row's values are ordered, only that rows are whole;
    channel-major rows let each channel transpose as a plain u8 plane, which numpy copies
    about 1.6x faster than the same transpose a 3-byte pixel at a time.
    """
    h, w = rgb.shape[:2]
    out = np.empty((w, 3, h), dtype=np.uint8)

    def run(start: int, stop: int) -> None:
        for c in range(3):
            np.copyto(out[start:stop, c], rgb[:, start:stop, c].T)

    par.for_chunks(run, w, par.rows_per_worker(w, h * w))
    return out


def _from_planar_columns(cols: np.ndarray) -> np.ndarray:
    """The HWC u8 image whose :func:`_to_planar_columns` is ``cols`` (``[w, 3, h]``)."""
    w, _, h = cols.shape
    out = np.empty((h, w, 3), dtype=np.uint8)

    def run(start: int, stop: int) -> None:
        for c in range(3):
            np.copyto(out[start:stop, :, c], cols[:, c, start:stop].T)

    par.for_chunks(run, h, par.rows_per_worker(h, h * w))
    return out


# Bytes of one int32 accumulator band (measured fastest at 2^19 on 1-2 MP images).
_BAND_BYTES = 1 << 19


def resize_aten_u8(rgb: np.ndarray, out_w: int, out_h: int, filt: str = "bicubic") -> np.ndarray:
    """ATen's resize with filter ``filt`` (a :data:`FILTERS` name), in ATen's order: the
    horizontal pass (over all source rows) first, u8 in between.

    Row passes are the fast shape in numpy (whole-row gathers), so the horizontal pass
    runs as a row pass on the image's columns (:func:`_to_planar_columns`) and is
    transposed back.
    """
    in_h, in_w = rgb.shape[:2]
    out = np.ascontiguousarray(rgb)
    if out_w != in_w:
        cols = _aten_rows(_to_planar_columns(out).reshape(in_w, 3 * in_h), out_w, filt)
        out = _from_planar_columns(cols.reshape(out_w, 3, in_h))
    if out_h != in_h:
        out = _aten_rows(out.reshape(in_h, out_w * 3), out_h, filt).reshape(out_h, out_w, 3)
    return out
