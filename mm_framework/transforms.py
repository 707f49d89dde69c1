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


# ---------------------------------------------------------------------------
# The same tables as f32 arithmetic
# ---------------------------------------------------------------------------
#
# A numpy gather widens every u8 index to intp before it looks anything up; the same
# values computed by two or three f32 ufuncs on contiguous scratch are cheaper (and the
# ufuncs release the GIL on every chunk). They are used only where they provably give
# the table: each program is run on all 256 inputs of every channel when the norm is
# built, and kept only if every result has the table's exact bits. IEEE f32 add,
# subtract, multiply and divide are correctly rounded, and numpy never fuses two ufunc
# calls, so a program that matches on the 256 inputs matches on every pixel.

Step = tuple[np.ufunc, np.ndarray]  # (ufunc, per-channel f32 constants [3])


class ChannelNorm:
    """Rescale + normalize of u8 values: the exact ``[3, 256]`` f32 ``lut`` and, when one of
    the candidate programs reproduces every entry bit for bit, its f32 ``steps``.

    A program is a sequence of ``(ufunc, constants)``: start from ``f32(v)`` and apply
    ``x = ufunc(x, constants[c])`` in order. ``steps`` is ``None`` when no candidate
    matches; consumers then gather from ``lut``. Immutable.
    """

    __slots__ = ("lut", "steps")

    def __init__(self, lut: np.ndarray, candidates: Sequence[Sequence[Step]] = ()) -> None:
        lut = np.array(_check_lut(lut), dtype=np.float32, copy=True)
        lut.flags.writeable = False
        found: tuple[Step, ...] | None = None
        for program in candidates:
            steps = tuple((ufunc, _const3(k)) for ufunc, k in program)
            if _program_matches(steps, lut):
                found = steps
                break
        self.lut = lut
        self.steps = found

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "steps"):
            raise AttributeError("ChannelNorm is immutable")
        object.__setattr__(self, name, value)


def _const3(k: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.array(np.broadcast_to(np.asarray(k, dtype=np.float32), (3,)))
    a.flags.writeable = False
    return a


def _run_steps(steps: Sequence[Step], c: int, x: np.ndarray) -> np.ndarray:
    """Apply ``steps`` for channel ``c`` in place on the f32 array ``x``."""
    for ufunc, k in steps:
        ufunc(x, k[c], out=x)
    return x


def _program_matches(steps: tuple[Step, ...], lut: np.ndarray) -> bool:
    v = np.arange(256, dtype=np.float32)
    for c in range(3):
        x = _run_steps(steps, c, v.copy())
        if x.dtype != np.float32 or x.tobytes() != lut[c].tobytes():
            return False
    return True


def channel_norm_pil(mean: Sequence[float], std: Sequence[float], rescale_factor: float = 1 / 255) -> ChannelNorm:
    """:func:`normalize_lut_pil` with its arithmetic: the f64 rescale of transformers is
    matched by one f32 divide (or multiply) where that is exact for all 256 values."""
    m, s = _channel_params(mean, std)
    r = float(rescale_factor)
    rescales = [(np.divide, 1.0 / r), (np.multiply, r)] if r != 0 else []
    programs = [[step, (np.subtract, m), (np.divide, s)] for step in rescales]
    return ChannelNorm(normalize_lut_pil(mean, std, rescale_factor), programs)


def channel_norm_fused(mean: Sequence[float], std: Sequence[float], rescale_factor: float = 1 / 255) -> ChannelNorm:
    """:func:`normalize_lut_fused` with its arithmetic (``(v - mean') / std'`` in f32)."""
    m, s = _channel_params(mean, std)
    k = np.float32(1.0 / float(rescale_factor))
    return ChannelNorm(normalize_lut_fused(mean, std, rescale_factor), [[(np.subtract, m * k), (np.divide, s * k)]])


def channel_norm_recip(mean: Sequence[float], std: Sequence[float]) -> ChannelNorm:
    """:func:`normalize_lut_recip` with its arithmetic."""
    m, s = _channel_params(mean, std)
    program = [(np.multiply, np.float32(1 / 255)), (np.subtract, m), (np.divide, s)]
    return ChannelNorm(normalize_lut_recip(mean, std), [program])


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


# Pixels per band (a few merge-window rows). 2^17 measured ~3% faster on 1-2 MP images,
# but its per-worker scratch (~2 MB) pushed peak RSS of a 2-thread request toward half
# the output size; 2^16 halves that.
_BAND_PIXELS = 1 << 16


def patchify_merged_blocks(
    rgb: np.ndarray, ps: int, merge: int, tps: int, norm: ChannelNorm | np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """HF Qwen-VL ``pixel_values`` of one still image: f32 ``[gh*gw, 3*tps*ps*ps]``.

    Rows go merge window by merge window (windows raster order, patches raster order
    inside a window); columns are ``(c, t, py, px)``; every temporal copy equals frame 0
    (HF repeats the single frame). Value ``norm.lut[c][rgb[y, x, c]]``; ``norm`` is a
    :class:`ChannelNorm` or a bare ``[3, 256]`` f32 table. ``rgb`` is HWC uint8 (any
    strides) with ``h`` and ``w`` multiples of ``ps*merge``; ``out`` may be preallocated.

    Per band of merge-window rows: the band's pixels are reordered into patch order a
    whole patch row (``ps`` pixels, all channels) at a time; each channel is widened to
    f32 and normalized on contiguous scratch (by ``norm.steps`` when it has them, else a
    table gather); one block copy then writes every ``(c, t)`` plane of the band's output
    rows in memory order, the temporal copies included. Bands fan out over
    :func:`mm_framework.par.for_chunks`; each writes only its own output rows, so any
    thread count gives the same bytes.
    """
    _check_rgb(rgb)
    if not isinstance(norm, ChannelNorm):
        norm = ChannelNorm(norm)
    h, w = rgb.shape[:2]
    step = ps * merge
    if ps <= 0 or merge <= 0 or tps <= 0 or h % step or w % step:
        raise InternalError(f"patchify: {h}x{w} is not a multiple of patch {ps} x merge {merge}")
    bh = h // step
    per_row = (w // step) * merge * merge  # patches per row of merge windows
    p2 = ps * ps
    out = _check_out(out, (bh * per_row, 3 * tps * p2))
    dst = out.reshape(bh, per_row, 3, tps, p2)
    band = max(1, _BAND_PIXELS // (per_row * p2))
    # Whole rows of bytes are needed to view patch rows as single items.
    contiguous_rows = rgb.strides[1] == 3 and rgb.strides[2] == 1

    def rows(start: int, stop: int) -> None:
        scratch = _BandScratch(min(band, stop - start), step, w, per_row, p2, contiguous_rows)
        for a in range(start, stop, band):
            b = min(stop, a + band)
            _patchify_band(rgb[a * step : b * step], dst[a:b], ps, merge, norm, scratch)

    par.for_chunks(rows, bh, par.rows_per_worker(bh, h * w))
    return out


class _BandScratch:
    """Per-worker buffers of :func:`_patchify_band`, sized for its largest band."""

    def __init__(self, nb: int, step: int, w: int, per_row: int, p2: int, contiguous_rows: bool) -> None:
        n = nb * per_row
        self.source = None if contiguous_rows else np.empty((nb * step, w, 3), dtype=np.uint8)
        self.patches = np.empty((n, p2, 3), dtype=np.uint8)
        self.values = np.empty((3, n, p2), dtype=np.float32)


def _patchify_band(
    src: np.ndarray, dst: np.ndarray, ps: int, merge: int, norm: ChannelNorm, scratch: _BandScratch
) -> None:
    """Merge-window rows ``src`` (``[nb*ps*merge, w, 3]``) into ``dst`` (``[nb, per_row, 3, tps, ps*ps]``)."""
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
        v = values[c]
        if norm.steps is not None:
            np.copyto(v, patches[:, :, c])
            _run_steps(norm.steps, c, v)
        else:
            np.take(norm.lut[c], patches[:, :, c], out=v, mode="clip")
    # One (c, t) plane of one patch as a single item; frame 0 broadcasts to every t, and
    # the copy walks the output in memory order.
    plane = np.dtype((np.void, p2 * 4))
    np.copyto(dst.reshape(n, 3, tps, p2).view(plane)[..., 0], values.view(plane)[..., 0].T[:, :, None])
