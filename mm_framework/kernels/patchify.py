"""Patch layouts: u8 HWC pixels to the model's f32 patch rows, normalized on the way
(or left u8, for an engine that normalizes on its device).

Bands of output rows fan out on the ``par`` seam; each band writes only its own rows, so
every thread count gives the same bytes (docs/architecture.md, "Patch layouts").
"""

from __future__ import annotations

import numpy as np

from .. import par
from ..checks import check_rgb
from ..errors import InternalError
from . import native
from .bf16 import Bf16Norm, bf16_bits
from .norm import ChannelNorm

# Pixels per band (a few merge-window rows). 2^17 measured ~3% faster on 1-2 MP images,
# but its per-worker scratch (~2 MB) pushed peak RSS of a 2-thread request toward half
# the output size; 2^16 halves that.
_BAND_PIXELS = 1 << 16


def patch_dtype(norm: ChannelNorm | Bf16Norm | np.ndarray | None) -> type[np.generic]:
    """The element type of the patches :func:`patchify_merged_blocks` writes with ``norm``."""
    return np.uint8 if norm is None else np.uint16 if isinstance(norm, Bf16Norm) else np.float32


def patchify_merged_blocks(
    rgb: np.ndarray, ps: int, merge: int, tps: int, norm: ChannelNorm | Bf16Norm | np.ndarray | None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """HF Qwen-VL ``pixel_values`` of one still image, or of one temporal patch of a
    video: f32 ``[gh*gw, 3*tps*ps*ps]``.

    Rows go merge window by merge window (windows raster order, patches raster order
    inside a window); columns are ``(c, t, py, px)``. ``rgb`` is one HWC uint8 frame,
    copied into every temporal slot (HF repeats a still image), or a ``[tps, h, w, 3]``
    stack whose frame ``t`` fills slot ``t`` (a video's temporal patch). Value
    ``norm.lut[c][frame[y, x, c]]``; ``norm`` is a :class:`ChannelNorm` or a bare
    ``[3, 256]`` f32 table. Frames may have any strides; ``h`` and ``w`` are multiples
    of ``ps*merge``; ``out`` may be preallocated. ``norm=None`` writes the u8 values
    themselves into a uint8 array of the same layout (:func:`_u8_layout`); a :class:`Bf16Norm`
    writes the uint16 bfloat16 bits of the f32 values (the portable path rounds the f32
    patches; the C kernel looks the bits up in ``Bf16Norm.lut``).

    Per band of merge-window rows and per frame: the band's pixels are reordered into
    patch order a whole patch row (``ps`` pixels, all channels) at a time; each channel is
    widened to f32 and normalized on contiguous scratch (by ``norm.steps`` when it has
    them, else a table gather); one block copy then writes the frame's ``(c, t)`` planes
    of the band's output rows in memory order (every ``t`` for a still image). Bands fan
    out over :func:`mm_framework.par.for_chunks`; each writes only its own output rows, so
    any thread count gives the same bytes. With the native kernels active, one C kernel
    writes the same bytes (f32 or u8) in one pass per band instead.
    """
    frames = _frames(rgb, tps)
    h, w = frames[0].shape[:2]
    step = ps * merge
    if ps <= 0 or merge <= 0 or tps <= 0 or h % step or w % step:
        raise InternalError(f"patchify: {h}x{w} is not a multiple of patch {ps} x merge {merge}")
    bh = h // step
    per_row = (w // step) * merge * merge  # patches per row of merge windows
    p2 = ps * ps
    out = _out_array(out, (bh * per_row, 3 * tps * p2), patch_dtype(norm))
    if isinstance(norm, Bf16Norm):
        if native.use_native():
            return native.patchify_qwen(rgb, norm.lut, ps, merge, tps, out)
        out[...] = bf16_bits(patchify_merged_blocks(rgb, ps, merge, tps, norm.norm))
        return out
    if norm is not None and not isinstance(norm, ChannelNorm):
        norm = ChannelNorm(norm)
    if native.use_native():  # one C pass straight into this layout (docs/kernels.md)
        return native.patchify_qwen(rgb, None if norm is None else norm.lut, ps, merge, tps, out)
    if norm is None:
        return _u8_layout(frames, ps, merge, tps, out)
    dst = out.reshape(bh, per_row, 3, tps, p2)
    band = max(1, _BAND_PIXELS // (per_row * p2))
    # Whole rows of bytes are needed to view patch rows as single items.
    contiguous_rows = rgb.strides[-2] == 3 and rgb.strides[-1] == 1

    def rows(start: int, stop: int) -> None:
        scratch = _BandScratch(min(band, stop - start), step, w, per_row, p2, contiguous_rows)
        for a in range(start, stop, band):
            b = min(stop, a + band)
            for t, frame in enumerate(frames):
                _patchify_band(frame[a * step : b * step], dst[a:b], ps, merge, norm, scratch, t, len(frames) == 1)

    par.for_chunks(rows, bh, par.rows_per_worker(bh, h * w * len(frames)))
    return out


def _frames(rgb: np.ndarray, tps: int) -> list[np.ndarray]:
    """The frames of ``rgb``: one HWC image, or the ``tps`` frames of a ``[tps, h, w, 3]`` stack."""
    if isinstance(rgb, np.ndarray) and rgb.ndim == 4:
        if rgb.shape[0] != tps:
            raise InternalError(f"patchify: {rgb.shape[0]} frames for a temporal patch of {tps}")
        return [check_rgb(f, "patchify") for f in rgb]
    return [check_rgb(rgb, "patchify")]


def _out_array(out: np.ndarray | None, shape: tuple[int, ...], dtype: type) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=dtype)
    if not isinstance(out, np.ndarray) or out.dtype != dtype or out.shape != shape or not out.flags.c_contiguous:
        raise InternalError(f"out must be a C-contiguous {np.dtype(dtype).name} array of shape {shape}")
    return out


def _u8_layout(frames: list[np.ndarray], ps: int, merge: int, tps: int, out: np.ndarray) -> np.ndarray:
    """The patch layout of the u8 values, into the uint8 ``out``. Each frame is made
    planar first, so the reorder then moves whole patch rows (``ps`` bytes) per element;
    one pass over the interleaved pixels measured ~25% slower."""
    h, w = frames[0].shape[:2]
    bh, bw = h // (ps * merge), w // (ps * merge)
    patch_row = np.dtype((np.void, ps))
    dst = out.reshape(bh, bw, merge, merge, 3, tps, ps * ps).view(patch_row).reshape(bh, bw, merge, merge, 3, tps, ps)
    for t, frame in enumerate(frames):
        planar = np.ascontiguousarray(frame.transpose(2, 0, 1))
        # (c, bh, my, py, bw, mx) -> (bh, bw, my, mx, c, py): windows, then patches, then (c, py) columns.
        src = planar.view(patch_row).reshape(3, bh, merge, ps, bw, merge).transpose(1, 4, 2, 5, 0, 3)
        if len(frames) == 1:  # a still image fills every temporal slot, as HF repeats it
            np.copyto(dst, src[:, :, :, :, :, None])
        else:
            np.copyto(dst[:, :, :, :, :, t], src)
    return out


class _BandScratch:
    """Per-worker buffers of :func:`_patchify_band`, sized for its largest band."""

    def __init__(self, nb: int, step: int, w: int, per_row: int, p2: int, contiguous_rows: bool) -> None:
        n = nb * per_row
        self.source = None if contiguous_rows else np.empty((nb * step, w, 3), dtype=np.uint8)
        self.patches = np.empty((n, p2, 3), dtype=np.uint8)
        self.values = np.empty((3, n, p2), dtype=np.float32)


def _patchify_band(
    src: np.ndarray, dst: np.ndarray, ps: int, merge: int, norm: ChannelNorm, scratch: _BandScratch, t: int, every: bool
) -> None:
    """Merge-window rows ``src`` (``[nb*ps*merge, w, 3]``) of one frame into temporal slot
    ``t`` of ``dst`` (``[nb, per_row, 3, tps, ps*ps]``), or into every slot when ``every``."""
    nb, per_row, _, tps, p2 = dst.shape
    rows, w = src.shape[:2]
    bw, n = w // (ps * merge), nb * per_row
    if scratch.source is not None:
        np.copyto(scratch.source[:rows], src)
        src = scratch.source[:rows]
    # ps pixels of one patch row, all three channels, as a single item: the reorder into
    # patch order then moves 3*ps bytes per element instead of one.
    patch_row = np.dtype((np.void, ps * 3))
    items = src.reshape(rows, w * 3).view(patch_row).reshape(nb, merge, ps, bw, merge)
    patches = scratch.patches[:n]
    np.copyto(
        patches.reshape(n * ps, ps * 3).view(patch_row).reshape(nb, bw, merge, merge, ps),
        items.transpose(0, 3, 1, 4, 2),
    )
    values = scratch.values[:, :n]
    for c in range(3):
        norm.apply(c, patches[:, :, c], values[c])
    # One (c, t) plane of one patch as a single item; a still frame broadcasts to every t,
    # and the copy walks the output in memory order.
    plane = np.dtype((np.void, p2 * 4))
    planes = dst.reshape(n, 3, tps, p2).view(plane)[..., 0]
    frame = values.view(plane)[..., 0].T
    np.copyto(planes if every else planes[:, :, t], frame[:, :, None] if every else frame)
