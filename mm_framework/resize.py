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
from .decode import rgb_array
from .errors import MediaError, SpecError

RESAMPLERS = ("pil_bicubic", "pil_lanczos", "aten_u8")
_PIL_FILTERS = {"pil_bicubic": Image.Resampling.BICUBIC, "pil_lanczos": Image.Resampling.LANCZOS}


def check_resample(resample: str) -> str:
    """``resample`` if it names a known resizer, else :class:`SpecError` ("unknown resample")."""
    if resample not in RESAMPLERS:
        raise SpecError(f"unknown resample {resample!r}; expected one of {', '.join(RESAMPLERS)}")
    return resample


def resize_rgb(
    rgb: np.ndarray, out_w: int, out_h: int, resample: str, *, source: Image.Image | None = None
) -> np.ndarray:
    """Resize HWC uint8 RGB to ``(out_h, out_w, 3)`` bit-exactly as ``resample``'s reference.

    Equal sizes return a (writable) copy without filtering, as Pillow, torchvision and HF
    do. Otherwise the result may be a read-only array.

    ``source``: an ``RGB`` Pillow image holding exactly the pixels of ``rgb`` (the image
    :func:`mm_framework.decode.take_source` lends); the Pillow resamplers then start from
    it instead of rebuilding one from the array. Ignored when its mode or size differs.
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
    if source is not None and (source.mode != "RGB" or source.size != (in_w, in_h)):
        source = None
    return _resize_pil(rgb, out_w, out_h, _PIL_FILTERS[resample], source)


# ---------------------------------------------------------------------------
# "pil_*": Pillow itself, optionally split into bands across the fan-out seam.
# ---------------------------------------------------------------------------
#
# Pillow resizes in two separable passes, each skipped when its dimension is unchanged,
# with a uint8 image in between. Pillow 13 runs the vertical pass first iff
# ``in_h - out_h > 0 and in_h - out_h > 2 * (in_w - out_w)`` (hf-reference §3.3),
# otherwise the horizontal one. A pass's coefficients depend only on the input and
# output length of its own axis, so the horizontal pass of a band of whole rows, or the
# vertical pass of a band of whole columns, is exactly those rows or columns of the
# full pass; a Pillow resize that changes one dimension runs that single pass. Doing
# each pass as bands (rows for the horizontal pass, columns for the vertical one) is
# therefore byte-identical to one ``Image.resize``, whatever the band boundaries
# (tests/test_resize_bands.py checks it against Pillow on many sizes and orders). Only
# the band boundaries of a cropped box would change coefficients, and no box is used.

# Input plus output pixels from which a resize is split into bands. The split costs an
# intermediate image and band copies (about +5 MB peak RSS on a 1280x960 request, 0.68x
# instead of 0.47x of its output) for 0.78x the single-image latency there; below 4 MP
# that trade is not taken. Multi-image requests already use the pool across images.
_BAND_MIN_PIXELS = 1 << 22


def _resize_pil(
    rgb: np.ndarray, out_w: int, out_h: int, filt: Image.Resampling, source: Image.Image | None = None
) -> np.ndarray:
    in_h, in_w = rgb.shape[:2]
    bands = par.pool_size() if not par.on_worker() else 1
    if bands < 2 or in_h * in_w + out_h * out_w < _BAND_MIN_PIXELS:
        im = source if source is not None else Image.fromarray(np.ascontiguousarray(rgb))
        return rgb_array(im.resize((out_w, out_h), filt, reducing_gap=None))
    return _resize_pil_bands(rgb, out_w, out_h, filt, bands, source)


def pil_vertical_first(in_w: int, in_h: int, out_w: int, out_h: int) -> bool:
    """Pillow 13's pass order: True when the vertical pass runs before the horizontal one."""
    dh, dw = in_h - out_h, in_w - out_w
    return dh > 0 and dh > 2 * dw


def _spans(total: int, parts: int) -> list[tuple[int, int]]:
    edges = [total * i // parts for i in range(parts + 1)]
    return [(a, b) for a, b in zip(edges, edges[1:]) if b > a]


def _resize_pil_bands(
    rgb: np.ndarray, out_w: int, out_h: int, filt: Image.Resampling, bands: int, source: Image.Image | None = None
) -> np.ndarray:
    """``Image.resize`` of ``rgb`` computed as per-pass bands on the pool (same bytes).

    Bands of the input come from ``source`` when given (a Pillow crop), else from ``rgb``.
    """
    in_h, in_w = rgb.shape[:2]

    def rows_of_input(a: int, b: int) -> Image.Image:
        return source.crop((0, a, in_w, b)) if source is not None else Image.fromarray(rgb[a:b])

    def cols_of_input(a: int, b: int) -> Image.Image:
        if source is not None:
            return source.crop((a, 0, b, in_h))
        return Image.fromarray(np.ascontiguousarray(rgb[:, a:b]))
    out = np.empty((out_h, out_w, 3), dtype=np.uint8)
    h_pass, v_pass = out_w != in_w, out_h != in_h
    if not (h_pass and v_pass):
        # One pass: bands of the input in that pass's independent direction.
        spans = _spans(in_h if h_pass else in_w, bands)

        def single(i: int, _: object) -> None:
            a, b = spans[i]
            if h_pass:
                out[a:b] = rgb_array(rows_of_input(a, b).resize((out_w, b - a), filt, reducing_gap=None))
            else:
                out[:, a:b] = rgb_array(cols_of_input(a, b).resize((b - a, out_h), filt, reducing_gap=None))

        par.try_map(single, spans)
        return out
    vertical_first = pil_vertical_first(in_w, in_h, out_w, out_h)
    # The intermediate: output height and input width after a vertical pass, else the reverse.
    mid = Image.new("RGB", (in_w, out_h) if vertical_first else (out_w, in_h))
    first = _spans(in_w if vertical_first else in_h, bands)

    def first_pass(i: int, _: object) -> None:
        a, b = first[i]
        if vertical_first:  # column bands of the input
            mid.paste(cols_of_input(a, b).resize((b - a, out_h), filt, reducing_gap=None), (a, 0))
        else:  # row bands of the input
            mid.paste(rows_of_input(a, b).resize((out_w, b - a), filt, reducing_gap=None), (0, a))

    par.try_map(first_pass, first)
    second = _spans(out_h if vertical_first else out_w, bands)

    def second_pass(i: int, _: object) -> None:
        a, b = second[i]
        if vertical_first:  # row bands of the intermediate, horizontal pass
            piece = mid.crop((0, a, in_w, b)).resize((out_w, b - a), filt, reducing_gap=None)
            out[a:b] = rgb_array(piece)
        else:  # column bands of the intermediate, vertical pass
            piece = mid.crop((a, 0, b, in_h)).resize((b - a, out_h), filt, reducing_gap=None)
            out[:, a:b] = rgb_array(piece)

    par.try_map(second_pass, second)
    return out


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


def _aten_rows(src: np.ndarray, out_rows: int) -> np.ndarray:
    """One separable uint8 pass over the rows of ``src`` (``[n_in, L]`` u8, rows of pixels).

    Integer math only, as ATen: each output byte is ``clip8((2^(P-1) + sum_j row_j*k_j) >> P)``
    with the taps of :func:`aten_coeffs`, accumulated in int32 (exact, so the order of
    the sum is free). Per band of output rows and tap: one gather of whole source rows
    (a memcpy each), one multiply by that tap's per-row weights, one add; taps whose
    weights are all zero in the band are skipped. Bands are independent and fan out on
    :func:`mm_framework.par.for_chunks` with byte-identical results.
    """
    n_in, width = src.shape
    index, weight, precision = aten_coeffs(n_in, out_rows)
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


def _resize_aten_u8(rgb: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """ATen's order: the horizontal pass (over all source rows) first, u8 in between.

    Row passes are the fast shape in numpy (whole-row gathers), so the horizontal pass
    runs as a row pass on the image's columns (:func:`_to_planar_columns`) and is
    transposed back.
    """
    in_h, in_w = rgb.shape[:2]
    out = np.ascontiguousarray(rgb)
    if out_w != in_w:
        cols = _aten_rows(_to_planar_columns(out).reshape(in_w, 3 * in_h), out_w)
        out = _from_planar_columns(cols.reshape(out_w, 3, in_h))
    if out_h != in_h:
        out = _aten_rows(out.reshape(in_h, out_w * 3), out_h).reshape(out_h, out_w, 3)
    return out
