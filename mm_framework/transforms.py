"""Pixel-geometry and pixel-value primitives shared by families.

Everything here is exact against a named reference (transformers 5.24.0, torchvision,
Pillow 13); the docstrings say which. Sizing helpers use Python floats (IEEE f64), as
the references do. Image-sized work is float32 only; just the 256-entry tables are
built in whatever precision the mirrored reference uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import par
from .errors import InternalError, MediaError, SpecError

# ---------------------------------------------------------------------------
# Sizing
# ---------------------------------------------------------------------------


def smart_resize(h: int, w: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Target ``(h, w)`` for Qwen-VL style resizing, exactly as transformers 5.24.0.

    Mirrors ``transformers.models.qwen2_vl.image_processing_pil_qwen2_vl.smart_resize``
    (f64 math, Python ``round`` = half-to-even, ``h/beta/f`` evaluation order):

    - ``h_bar = round(h/f)*f`` (no lower clamp here, so a side <= f/2 rounds to 0 and
      then usually takes the upscale branch);
    - above ``max_pixels``: ``max(f, floor(side/beta/f)*f)`` with ``beta = sqrt(h*w/max)``;
    - else below ``min_pixels``: ``ceil(side*beta/f)*f`` with ``beta = sqrt(min/(h*w))``.

    This deliberately follows HF, not the sglang crate formula of core-contracts §11.5
    (which clamps the first step with ``max(f, ·)`` and not the floor step). The two
    differ only for very thin images (families.md §2.3 divergence table; HF values are
    pinned in the tests). Where HF would go on to fail (zero side, empty image, ratio
    above 200) this raises :class:`MediaError` instead.
    """
    if factor <= 0 or max_pixels <= 0 or min_pixels < 0:
        raise SpecError(
            f"smart_resize: factor and max_pixels must be positive and min_pixels non-negative, "
            f"got factor={factor} min_pixels={min_pixels} max_pixels={max_pixels}"
        )
    if h <= 0 or w <= 0:
        raise MediaError(f"smart_resize: empty image ({h}x{w})")
    ratio = max(h, w) / min(h, w)
    if ratio > 200:
        raise MediaError(f"absolute aspect ratio must be smaller than 200, got {ratio}")
    h_bar = round(h / factor) * factor
    w_bar = round(w / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((h * w) / max_pixels)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        h_bar = math.ceil(h * beta / factor) * factor
        w_bar = math.ceil(w * beta / factor) * factor
    if h_bar <= 0 or w_bar <= 0:
        # Only reachable with min_pixels == 0; HF would fail later inside PIL.
        raise MediaError(
            f"smart_resize: {h}x{w} degenerates to {h_bar}x{w_bar} at min_pixels={min_pixels} "
            f"max_pixels={max_pixels}; image is too thin for this pixel budget"
        )
    return h_bar, w_bar


def scaled_dims(w: int, h: int, frac: float | None = None, cap: int | None = None) -> tuple[int, int]:
    """Long-edge rescale ``(w, h) -> (w', h')`` (Inkling; core-contracts §13).

    ``target = long*frac``, capped at ``max(cap, long)`` so the cap only limits growth;
    each side becomes ``max(1, floor(side*ratio + 0.5))`` (round half up, f64).
    Unchanged when ``frac`` is None, the long side is 0, or the ratio is exactly 1.
    """
    long = max(w, h)
    if frac is None or long == 0:
        return w, h
    target = long * float(frac)
    if cap is not None:
        target = min(target, float(max(cap, long)))
    ratio = target / long
    if ratio == 1.0:
        return w, h
    return max(1, math.floor(w * ratio + 0.5)), max(1, math.floor(h * ratio + 0.5))


def patch_grid(h: int, w: int, ph: int, pw: int) -> tuple[int, int]:
    """Patches per column and row when ``h x w`` is padded up to whole patches."""
    if ph <= 0 or pw <= 0:
        raise SpecError(f"patch size must be positive, got {ph}x{pw}")
    return -(-h // ph), -(-w // pw)


# ---------------------------------------------------------------------------
# Rescale + normalize as 3x256 float32 lookup tables
# ---------------------------------------------------------------------------
#
# Rescale and normalize are a per-channel function of the u8 value, so a table per
# channel is exact for any formula; the variants below differ only in f32 rounding and
# each mirrors one reference bit for bit (core-contracts §11.6).


def _channel_params(mean: Sequence[float], std: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    m = np.asarray(mean, dtype=np.float64)
    s = np.asarray(std, dtype=np.float64)
    if m.shape != (3,) or s.shape != (3,):
        raise SpecError(f"mean and std need 3 values each, got {m.shape} and {s.shape}")
    if not (np.isfinite(m).all() and np.isfinite(s).all()) or (s == 0).any():
        raise SpecError(f"mean and std must be finite and std non-zero, got mean={list(mean)} std={list(std)}")
    return m.astype(np.float32), s.astype(np.float32)


_U8 = np.arange(256, dtype=np.float64)


def normalize_lut_pil(mean: Sequence[float], std: Sequence[float], rescale_factor: float = 1 / 255) -> np.ndarray:
    """``[3, 256]`` f32 table of transformers' PIL/numpy backend (``Qwen2VLImageProcessorPil``).

    ``rescale``: ``f32(f64(v) * rescale_factor)``; ``normalize``: ``(x - f32(mean)) / f32(std)``
    in f32 (``image_transforms.rescale`` then ``image_transforms.normalize``).
    """
    m, s = _channel_params(mean, std)
    x = (_U8 * float(rescale_factor)).astype(np.float32)
    return np.ascontiguousarray((x[None, :] - m[:, None]) / s[:, None], dtype=np.float32)


def normalize_lut_fused(mean: Sequence[float], std: Sequence[float], rescale_factor: float = 1 / 255) -> np.ndarray:
    """``[3, 256]`` f32 table of transformers' torchvision backend (``Qwen2VLImageProcessor``).

    ``_fuse_mean_std_and_rescale_factor`` builds ``torch.tensor(mean) * (1.0/rescale_factor)``:
    an f32 tensor times a Python scalar, which torch rounds to f32 before multiplying; then
    ``tvF.normalize`` computes ``(f32(v) - mean') / std'`` in f32.
    """
    m, s = _channel_params(mean, std)
    k = np.float32(1.0 / float(rescale_factor))
    m2, s2 = m * k, s * k
    x = _U8.astype(np.float32)
    return np.ascontiguousarray((x[None, :] - m2[:, None]) / s2[:, None], dtype=np.float32)


def normalize_lut_recip(mean: Sequence[float], std: Sequence[float]) -> np.ndarray:
    """``[3, 256]`` f32 table of ``(f32(v) * f32(1/255) - mean) / std`` (Inkling's arithmetic).

    Multiplies by the f32 reciprocal of 255 rather than dividing (core-contracts §11.1).
    """
    m, s = _channel_params(mean, std)
    x = _U8.astype(np.float32) * np.float32(1 / 255)
    return np.ascontiguousarray((x[None, :] - m[:, None]) / s[:, None], dtype=np.float32)


def _check_lut(lut: np.ndarray) -> np.ndarray:
    if not isinstance(lut, np.ndarray) or lut.dtype != np.float32 or lut.shape != (3, 256):
        raise InternalError(f"normalize table must be float32 [3, 256], got {getattr(lut, 'shape', type(lut))}")
    return lut


def _check_rgb(rgb: np.ndarray) -> None:
    if not isinstance(rgb, np.ndarray) or rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        desc = f"{rgb.dtype} {rgb.shape}" if isinstance(rgb, np.ndarray) else type(rgb).__name__
        raise MediaError(f"expected an HWC uint8 RGB array, got {desc}")


def _check_out(out: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=np.float32)
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != shape or not out.flags.c_contiguous:
        raise InternalError(f"out must be a C-contiguous float32 array of shape {shape}")
    return out


def apply_lut(rgb: np.ndarray, lut: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """HWC f32 ``lut[c][rgb[y, x, c]]``: rescale + normalize of a whole image in one gather."""
    _check_rgb(rgb)
    _check_lut(lut)
    out = _check_out(out, rgb.shape)
    for c in range(3):
        np.take(lut[c], rgb[:, :, c], out=out[:, :, c], mode="clip")
    return out


def normalize_rgb_f32(
    rgb: np.ndarray, mean: Sequence[float], std: Sequence[float], out: np.ndarray | None = None
) -> np.ndarray:
    """HWC f32 ``(v * f32(1/255) - mean[c]) / std[c]`` (core-contracts §11.1), via a table."""
    return apply_lut(rgb, normalize_lut_recip(mean, std), out)


# ---------------------------------------------------------------------------
# Patch layouts
# ---------------------------------------------------------------------------


def pad_to_grid(
    data: np.ndarray, grid_h: int, grid_w: int, pad_value: Sequence[float]
) -> tuple[np.ndarray, int, int]:
    """Pad an HWC array at the bottom/right up to multiples of ``grid_h x grid_w``.

    The canvas is ``pad_value`` per channel with ``data`` at the top-left; returns
    ``(canvas, new_h, new_w)``. When no padding is needed ``data`` itself is returned.
    """
    if data.ndim != 3:
        raise InternalError(f"pad_to_grid expects HWC, got shape {data.shape}")
    h, w, c = data.shape
    nh, nw = patch_grid(h, w, grid_h, grid_w)
    nh, nw = nh * grid_h, nw * grid_w
    if len(pad_value) != c:
        raise InternalError(f"pad_value has {len(pad_value)} values for {c} channels")
    if (nh, nw) == (h, w):
        return data, h, w
    canvas = np.empty((nh, nw, c), dtype=data.dtype)
    canvas[...] = np.asarray(pad_value, dtype=data.dtype)
    canvas[:h, :w] = data
    return canvas, nh, nw


def extract_patches(data: np.ndarray, ph: int, pw: int) -> np.ndarray:
    """``[nph*npw, ph, pw, C]`` patches of an HWC array, patch ``i*npw + j`` row-major.

    ``h`` and ``w`` must be multiples of ``ph`` and ``pw`` (pad first with :func:`pad_to_grid`).
    """
    if data.ndim != 3:
        raise InternalError(f"extract_patches expects HWC, got shape {data.shape}")
    h, w, c = data.shape
    if ph <= 0 or pw <= 0 or h % ph or w % pw:
        raise InternalError(f"extract_patches: {h}x{w} is not a multiple of the {ph}x{pw} patch")
    nph, npw = h // ph, w // pw
    return data.reshape(nph, ph, npw, pw, c).transpose(0, 2, 1, 3, 4).reshape(nph * npw, ph, pw, c)


def patchify_merged_blocks(
    rgb: np.ndarray, ps: int, merge: int, tps: int, lut: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """HF Qwen-VL ``pixel_values`` of one still image: f32 ``[gh*gw, 3*tps*ps*ps]``.

    Rows go merge window by merge window (windows raster order, patches raster order
    inside a window); columns are ``(c, t, py, px)``; every temporal copy equals frame 0
    (HF repeats the single frame). Value ``lut[c][rgb[y, x, c]]``. ``h`` and ``w`` must
    be multiples of ``ps*merge``. One gather per channel straight into the final layout,
    then the temporal copies as block copies; ``out`` may be preallocated.
    """
    _check_rgb(rgb)
    _check_lut(lut)
    h, w = rgb.shape[:2]
    step = ps * merge
    if ps <= 0 or merge <= 0 or tps <= 0 or h % step or w % step:
        raise InternalError(f"patchify: {h}x{w} is not a multiple of patch {ps} x merge {merge}")
    bh, bw = h // step, w // step
    out = _check_out(out, (bh * bw * merge * merge, 3 * tps * ps * ps))
    # (bh, bw, mh, mw, c, t, py, px) view of the output rows/columns.
    dst = out.reshape(bh, bw, merge, merge, 3, tps, ps, ps)
    # Source (y, x, c) = ((bh*m + mh)*ps + py, (bw*m + mw)*ps + px, c) as a strided view.
    src = rgb.reshape(bh, merge, ps, bw, merge, ps, 3).transpose(0, 3, 1, 4, 6, 2, 5)

    def block_rows(start: int, stop: int) -> None:
        # One merged block row at a time keeps the temporal copy in cache.
        for i in range(start, stop):
            s, d = src[i], dst[i]
            for c in range(3):
                np.take(lut[c], s[:, :, :, c], out=d[:, :, :, c, 0], mode="clip")
            if tps > 1:
                d[:, :, :, :, 1:] = d[:, :, :, :, :1]

    par.for_chunks(block_rows, bh, par.rows_per_worker(bh, h * w))
    return out
