"""Exact uint8 RGB resizers.

``resample`` names the reference the bytes must equal:

- ``"pil_bicubic"`` / ``"pil_lanczos"`` / ``"pil_bilinear"``: Pillow's
  ``Image.resize(..., reducing_gap=None)`` on an ``RGB`` image. The portable path calls
  Pillow itself, so the result is whatever the installed Pillow does; Pillow 13 changed
  the bicubic pass order (docs/architecture.md, "Resize: Pillow"), so the reference is
  pinned together with the Pillow major version.
- ``"aten_u8"``: torchvision ``F.resize(uint8 CHW tensor, BICUBIC, antialias=True)``
  (ATen's ``_upsample_bicubic2d_aa`` uint8 path), re-implemented in numpy (:mod:`.aten`).
- ``"aten_u8_bilinear"``: the same with ``BILINEAR`` (``_upsample_bilinear2d_aa``). torchvision
  takes ATen's uint8 path for it only on AVX2/AVX512 and ARM CPUs; elsewhere it resizes in
  float32 and rounds, which this resampler does not clone.
- ``"aten_u8_lanczos"``: the same with ``LANCZOS`` (``_upsample_lanczos2d_aa``, torchvision
  >= 0.27 on CPU, which takes the uint8 path on every CPU).

With the native kernels active (:mod:`.native`), every resampler runs as two C passes
over the same reference's tables instead (docs/kernels.md); the Pillow and numpy paths
stay as the portable mode and as the oracle the native one is tested against.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image

from .. import par
from ..checks import check_rgb
from ..errors import MediaError, SpecError
from . import native
from .aten import aten_coeffs, resize_aten_u8
from .export import rgb_array

RESAMPLERS = ("pil_bicubic", "pil_lanczos", "pil_bilinear", "aten_u8", "aten_u8_bilinear",
              "aten_u8_lanczos")
# The ATen resamplers and their filter (:data:`.aten.FILTERS`).
_ATEN_FILTERS = {"aten_u8": "bicubic", "aten_u8_bilinear": "bilinear", "aten_u8_lanczos": "lanczos"}
# transformers' ``resample`` values (``PILImageResampling`` LANCZOS, BILINEAR, BICUBIC) -> the
# Pillow resampler of that filter (what a PIL-backend processor runs).
TRANSFORMERS_RESAMPLE = {1: "pil_lanczos", 2: "pil_bilinear", 3: "pil_bicubic"}
# The Pillow resampler -> the resampler of the same filter on transformers' torchvision backend
# (tvF.resize of uint8 tensors with antialias: ATen's uint8 path; LANCZOS needs torchvision >= 0.27).
TORCHVISION_RESAMPLERS = {"pil_lanczos": "aten_u8_lanczos", "pil_bilinear": "aten_u8_bilinear",
                          "pil_bicubic": "aten_u8"}
_PIL_FILTERS = {
    "pil_bicubic": Image.Resampling.BICUBIC,
    "pil_lanczos": Image.Resampling.LANCZOS,
    "pil_bilinear": Image.Resampling.BILINEAR,
}


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
    :func:`mm_framework.take_source` lends); the Pillow resamplers then start from
    it instead of rebuilding one from the array. Ignored when its mode or size differs,
    and by the native kernels (see :func:`resize_wants_source`).
    """
    check_resample(resample)
    check_rgb(rgb, "resize")
    in_h, in_w = rgb.shape[:2]
    if out_h <= 0 or out_w <= 0:
        raise MediaError(f"resize: empty size {in_w}x{in_h} -> {out_w}x{out_h}")
    if (out_h, out_w) == (in_h, in_w):
        return rgb.copy()
    if native.use_native():
        return _resize_native(rgb, out_w, out_h, resample)
    if resample in _ATEN_FILTERS:
        return resize_aten_u8(rgb, out_w, out_h, _ATEN_FILTERS[resample])
    if source is not None and (source.mode != "RGB" or source.size != (in_w, in_h)):
        source = None
    return _resize_pil(rgb, out_w, out_h, _PIL_FILTERS[resample], source)


def resize_wants_source(resample: str) -> bool:
    """True when :func:`resize_rgb` with ``resample`` would start from a lent Pillow image.

    A family decodes with ``keep_source`` only then: the native kernels and the ATen
    clone resize from the array, and holding the Pillow copy would only cost memory.
    """
    return check_resample(resample) not in _ATEN_FILTERS and not native.use_native()


# ---------------------------------------------------------------------------
# Native: the reference's per-axis tables through the C passes (docs/kernels.md).
# ---------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _axis_table(resample: str, in_size: int, out_size: int) -> native.Table:
    """One axis's table (immutable, so cached: requests repeat a few sizes)."""
    if resample in _ATEN_FILTERS:
        return native.table_from_taps(*aten_coeffs(in_size, out_size, _ATEN_FILTERS[resample]))
    return native.pil_table(in_size, out_size, resample.removeprefix("pil_"))


def _resize_native(rgb: np.ndarray, out_w: int, out_h: int, resample: str) -> np.ndarray:
    in_h, in_w = rgb.shape[:2]
    h = _axis_table(resample, in_w, out_w) if out_w != in_w else None
    v = _axis_table(resample, in_h, out_h) if out_h != in_h else None
    # ATen always runs the horizontal pass first; Pillow 13 picks by the size change.
    vertical_first = resample not in _ATEN_FILTERS and pil_vertical_first(in_w, in_h, out_w, out_h)
    return native.resize(rgb, h, v, vertical_first)


# ---------------------------------------------------------------------------
# "pil_*": Pillow itself, optionally split into bands across the fan-out seam.
# ---------------------------------------------------------------------------
#
# Pillow resizes in two separable passes, each skipped when its dimension is unchanged,
# with a uint8 image in between. Pillow 13 runs the vertical pass first iff
# ``in_h - out_h > 0 and in_h - out_h > 2 * (in_w - out_w)`` (docs/architecture.md),
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


