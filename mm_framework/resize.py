"""Exact uint8 RGB resizers.

``resample`` names the reference the bytes must equal:

- ``"pil_bicubic"`` / ``"pil_lanczos"``: Pillow's ``Image.resize(..., reducing_gap=None)``
  on an ``RGB`` image. These call Pillow itself, so the result is whatever the installed
  Pillow does; Pillow 13 changed the bicubic pass order (hf-reference §3.3), so the
  reference is pinned together with the Pillow major version.
- ``"aten_u8"``: torchvision ``F.resize(uint8 CHW tensor, BICUBIC, antialias=True)``
  (ATen's ``_upsample_bicubic2d_aa`` uint8 path), re-implemented in numpy.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

from . import par
from .errors import MediaError, SpecError

RESAMPLERS = ("pil_bicubic", "pil_lanczos", "aten_u8")
_PIL_FILTERS = {"pil_bicubic": Image.Resampling.BICUBIC, "pil_lanczos": Image.Resampling.LANCZOS}


def check_resample(resample: str) -> str:
    """``resample`` if it names a known resizer, else :class:`SpecError` ("unknown resample")."""
    if resample not in RESAMPLERS:
        raise SpecError(f"unknown resample {resample!r}; expected one of {', '.join(RESAMPLERS)}")
    return resample


def resize_rgb(rgb: np.ndarray, out_w: int, out_h: int, resample: str) -> np.ndarray:
    """Resize HWC uint8 RGB to ``(out_h, out_w, 3)`` bit-exactly as ``resample``'s reference.

    Equal sizes return a (writable) copy without filtering, as Pillow, torchvision and HF
    do. Otherwise the result may be a read-only array.
    """
    check_resample(resample)
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        desc = f"{rgb.dtype} {rgb.shape}" if isinstance(rgb, np.ndarray) else type(rgb).__name__
        raise MediaError(f"resize: expected an HWC uint8 RGB array, got {desc}")
    in_h, in_w = rgb.shape[:2]
    if in_h <= 0 or in_w <= 0 or out_h <= 0 or out_w <= 0:
        raise MediaError(f"resize: empty size {in_w}x{in_h} -> {out_w}x{out_h}")
    if (out_h, out_w) == (in_h, in_w):
        return rgb.copy()
    if resample == "aten_u8":
        return _resize_aten_u8(rgb, out_w, out_h)
    im = Image.fromarray(np.ascontiguousarray(rgb))
    out = im.resize((out_w, out_h), _PIL_FILTERS[resample], reducing_gap=None)
    # One copy out of Pillow's (padded RGBX) storage; no further copy on our side.
    return np.frombuffer(out.tobytes(), dtype=np.uint8).reshape(out_h, out_w, 3)


# ---------------------------------------------------------------------------
# "aten_u8": ATen's uint8 antialiased bicubic (aten/src/ATen/native/cpu/UpSampleKernel.cpp,
# HelperInterpBase::_compute_index_ranges_int16_weights and the separable uint8 passes).
# ---------------------------------------------------------------------------

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


def aten_coeffs(in_size: int, out_size: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-axis tap table of ATen's uint8 antialiased bicubic: ``(index, weight, precision)``.

    ``index`` is ``[out_size, ksize]`` int64 source positions (clamped in range; taps past
    an output's span carry weight 0), ``weight`` the matching int32 fixed-point weights
    (int16 range) and ``precision`` the per-axis fraction bits of
    ``_compute_weights_precision``: the largest ``P <= 22`` with
    ``int(0.5 + wmax*2^P) < 2^15``, ``wmax`` being the largest normalised weight of the axis.
    All geometry is f64 in ATen's operation order.
    """
    scale = in_size / out_size
    support = 2.0 * scale if scale >= 1.0 else 2.0
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
    w = np.where(live, _aten_bicubic(((pos.astype(np.float64) - center[:, None]) + 0.5) * invscale), 0.0)
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


def _aten_pass(src: np.ndarray, axis: int, out_size: int) -> np.ndarray:
    """One separable uint8 pass along ``axis`` (0: rows, 1: columns) of a C-contiguous HWC array.

    Integer math only: each output byte is ``clip8((2^(P-1) + sum_j src*k_j) >> P)`` with
    the taps of :func:`aten_coeffs`, accumulated in int32 one tap at a time over bands of
    rows small enough to stay in cache. Bands are independent, so they fan out on
    :func:`mm_framework.par.for_chunks` with byte-identical results.
    """
    h, w = src.shape[:2]
    index, weight, precision = aten_coeffs(src.shape[axis], out_size)
    taps = index.shape[1]
    flat = src.reshape(h, w * 3)
    if axis == 1:
        # Gather single bytes: column (x*3 + c) for every output (xx, c), one table per tap.
        cols = (index.T[:, :, None] * 3 + np.arange(3)).reshape(taps, out_size * 3)
        wts = np.repeat(weight.T, 3, axis=1)
        out = np.empty((h, out_size * 3), dtype=np.uint8)
    else:
        out = np.empty((out_size, w * 3), dtype=np.uint8)
    rows, width = out.shape
    band = max(1, _BAND_BYTES // (4 * width))

    def run(start: int, stop: int) -> None:
        n = min(band, stop - start)
        acc = np.empty((n, width), dtype=np.int32)
        tmp = np.empty((n, width), dtype=np.int32)
        gathered = np.empty((n, width), dtype=np.uint8)
        for a in range(start, stop, band):
            b = min(stop, a + band)
            acc_, tmp_, g_ = acc[: b - a], tmp[: b - a], gathered[: b - a]
            acc_.fill(1 << (precision - 1))
            for j in range(taps):
                if axis == 1:
                    np.take(flat[a:b], cols[j], axis=1, out=g_)
                    np.multiply(g_, wts[j], out=tmp_)
                else:
                    kj = weight[a:b, j]
                    if not kj.any():
                        continue
                    np.take(flat, index[a:b, j], axis=0, out=g_)
                    np.multiply(g_, kj[:, None], out=tmp_)
                acc_ += tmp_
            np.right_shift(acc_, precision, out=acc_)
            np.clip(acc_, 0, 255, out=acc_)
            out[a:b] = acc_

    par.for_chunks(run, rows, par.rows_per_worker(rows, rows * width // 3))
    return out.reshape(rows, -1, 3)


# Rows of one int32 accumulator band: small enough to stay in L2 with its temporaries.
_BAND_BYTES = 1 << 18


def _resize_aten_u8(rgb: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """ATen's order: the horizontal pass (over all source rows) first, u8 in between."""
    out = np.ascontiguousarray(rgb)
    if out_w != rgb.shape[1]:
        out = _aten_pass(out, 1, out_w)
    if out_h != rgb.shape[0]:
        out = _aten_pass(out, 0, out_h)
    return out
