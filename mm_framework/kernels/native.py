"""The native kernels' Python face: loading, the kernel mode, and band-driven calls.

``mm_framework.kernels._native`` is an optional C extension (built by ``pip install``
when a C compiler is present). ``MM_FRAMEWORK_KERNELS`` picks the kernels:

- unset or empty: ``native`` when the extension is built, else ``portable``;
- ``native``: the extension; when it is not built, :func:`active` raises
  :class:`~mm_framework.errors.UnsupportedError` naming the cause;
- ``portable``: the numpy/Pillow kernels, which are also the oracle the native ones are
  tested against (docs/kernels.md);
- anything else: a :class:`~mm_framework.errors.SettingError` naming the variable.

Read once, when first needed; :func:`set_mode` changes it at run time. The C extension
reads ``MM_FRAMEWORK_SIMD`` itself when it loads; :func:`simd_from_env` is its check.

The calls below drive the C entry points over bands of output rows on the ``par`` seam
(the extension starts no threads). Every band writes only its own rows, so any thread
count gives the same bytes. A C argument check that fails raises ``KernelError``; here
it becomes :class:`~mm_framework.errors.InternalError` (the caller passed a bad buffer).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from types import ModuleType
from typing import NamedTuple

import numpy as np

from .. import par
from ..errors import InternalError, SettingError, UnsupportedError

try:
    from . import _native
except ImportError as exc:  # not built (no compiler at install time) or not loadable
    _native = None
    if importlib.util.find_spec(f"{__package__}._native") is None:
        _missing = f"no compiled {__package__}._native is installed (was it built without a C compiler?)"
    else:
        _missing = f"{type(exc).__name__}: {exc}"
else:
    _missing = ""

ENV = "MM_FRAMEWORK_KERNELS"
MODES = ("native", "portable")
FORMS = "'native', 'portable', or unset for native when built, else portable"
SIMD_ENV = "MM_FRAMEWORK_SIMD"
SIMD_FORMS = "'baseline' (the portable C weighted sums even on an AVX2 CPU), or unset for AVX2 where present"
_lock = threading.Lock()
_mode: str | None = None


def built() -> bool:
    """True when the extension is importable."""
    return _native is not None


def missing_cause() -> str:
    """Why the extension is not importable ("" when it is)."""
    return _missing


def mode_from_env() -> str:
    """``MM_FRAMEWORK_KERNELS`` as asked: ``"native"``, ``"portable"`` or ``""`` (unset)."""
    raw = os.environ.get(ENV, "")
    requested = raw.strip().lower()
    if requested not in ("", *MODES):
        raise SettingError.bad_value(ENV, raw, FORMS)
    return requested


def simd_from_env() -> str:
    """``MM_FRAMEWORK_SIMD`` as the C extension reads it: exactly ``baseline``, or unset or empty.
    The C ignores any other value, so a typo would silently keep AVX2; it is refused here."""
    raw = os.environ.get(SIMD_ENV, "")
    if raw not in ("", "baseline"):
        raise SettingError.bad_value(SIMD_ENV, raw, SIMD_FORMS)
    return raw


def _resolve(requested: str) -> str:
    if requested == "":
        return "native" if built() else "portable"
    if requested not in MODES:
        raise UnsupportedError(f"kernel mode {requested!r} is not one of: {', '.join(MODES)} (or None)")
    if requested == "native" and not built():
        raise UnsupportedError(f"{ENV}=native, but the native kernels are not built ({_missing})")
    return requested


def set_mode(mode: str | None) -> None:
    """Use ``"native"`` or ``"portable"`` kernels from now on; ``None`` re-reads the env."""
    global _mode
    resolved = None if mode is None else _resolve(mode)
    with _lock:
        _mode = resolved


def active() -> str:
    """The kernels in use: ``"native"`` or ``"portable"``."""
    global _mode
    with _lock:
        if _mode is None:
            _mode = _resolve(mode_from_env())
        return _mode


def use_native() -> bool:
    """True when the native kernels are in use."""
    return active() == "native"


def simd_level() -> str:
    """SIMD level of the native kernels in use (``"avx2"`` or ``"baseline"``), or ``"none"``."""
    return _lib().simd_level() if use_native() else "none"


def _lib() -> ModuleType:
    if _native is None:
        raise UnsupportedError(f"the native kernels are not built ({_missing})")
    return _native


def _call(name: str, *args: object) -> None:
    lib = _lib()
    try:
        getattr(lib, name)(*args)
    except lib.KernelError as exc:
        raise InternalError(f"native kernel {name}: {exc}") from exc


def _rows(rows: int, pixels: int) -> int:
    return par.rows_per_worker(rows, pixels)


# ---------------------------------------------------------------------------
# Separable fixed-point resize (docs/kernels.md, "Separable fixed-point passes")
# ---------------------------------------------------------------------------


class Table(NamedTuple):
    """One axis of a separable resize: output ``i`` reads ``bounds[i, 1]`` inputs from
    ``bounds[i, 0]`` with int32 ``weights[i, :]`` and ``precision`` fraction bits."""

    bounds: np.ndarray
    weights: np.ndarray
    precision: int

    def span(self) -> tuple[int, int]:
        """``[first, last)``: the inputs any output reads."""
        ends = self.bounds[:, 0] + self.bounds[:, 1]
        return int(self.bounds[:, 0].min()), int(ends.max())

    def shifted(self, first: int) -> Table:
        """The same table over the inputs from ``first`` on."""
        if first == 0:
            return self
        bounds = self.bounds.copy()
        bounds[:, 0] -= first
        return Table(bounds, self.weights, self.precision)


PIL_FILTERS = {"bilinear": 0, "bicubic": 1, "lanczos": 2}


def pil_table(in_size: int, out_size: int, filt: str) -> Table:
    """Pillow 13's table for one axis of an 8-bit resize with ``filt`` (docs/kernels.md)."""
    lib = _lib()
    try:
        ksize, bounds, weights = lib.pil_coeffs(in_size, out_size, PIL_FILTERS[filt])
    except lib.KernelError as exc:
        raise InternalError(f"native kernel pil_coeffs: {exc}") from exc
    return Table(
        np.frombuffer(bounds, np.int32).reshape(out_size, 2),
        np.frombuffer(weights, np.int32).reshape(out_size, ksize),
        22,
    )


def table_from_taps(index: np.ndarray, weight: np.ndarray, precision: int) -> Table:
    """A :class:`Table` from per-output tap rows (``index[i, j]`` consecutive from
    ``index[i, 0]``). Taps after an output's last non-zero weight are dropped: they add
    exactly 0 (and are the ones whose index was clamped at the input's end)."""
    start = index[:, 0].astype(np.int32)
    live = weight != 0
    count = np.where(live.any(axis=1), weight.shape[1] - np.argmax(live[:, ::-1], axis=1), 0).astype(np.int32)
    bounds = np.ascontiguousarray(np.stack([start, count], axis=1))
    weights = np.ascontiguousarray(weight, np.int32)
    bounds.flags.writeable = weights.flags.writeable = False
    return Table(bounds, weights, precision)


def _row_contiguous(img: np.ndarray) -> np.ndarray:
    channels = img.shape[2] if img.ndim == 3 else 1
    inner_ok = img.strides[1] == channels and (img.ndim == 2 or img.strides[2] == 1)
    return img if inner_ok and img.strides[0] >= img.shape[1] * channels else np.ascontiguousarray(img)


def _horizontal(src: np.ndarray, out_w: int, t: Table) -> np.ndarray:
    dst = np.empty((src.shape[0], out_w) + src.shape[2:], np.uint8)

    def run(lo: int, hi: int) -> None:
        _call("resample_horizontal", src, dst, t.bounds, t.weights, t.precision, lo, hi)

    par.for_chunks(run, dst.shape[0], _rows(dst.shape[0], dst.shape[0] * out_w))
    return dst


def _vertical(src: np.ndarray, out_h: int, t: Table) -> np.ndarray:
    dst = np.empty((out_h,) + src.shape[1:], np.uint8)

    def run(lo: int, hi: int) -> None:
        _call("resample_vertical", src, dst, t.bounds, t.weights, t.precision, lo, hi)

    par.for_chunks(run, out_h, _rows(out_h, out_h * src.shape[1]))
    return dst


def resize(img: np.ndarray, h: Table | None, v: Table | None, vertical_first: bool) -> np.ndarray:
    """Two separable u8 passes over ``img`` (``[h, w]`` or ``[h, w, 1|3]`` uint8).

    ``h``/``v``: the horizontal/vertical table, or ``None`` to skip that pass. The first
    pass covers only the rows (or columns) the second one reads, as Pillow does; any
    input the second pass does not read cannot change the output, so this is exact for
    every table.
    """
    img = _row_contiguous(img)
    if h is not None and v is not None:
        if vertical_first:
            first, last = h.span()
            mid = _vertical(img[:, first:last], v.bounds.shape[0], v)
            return _horizontal(mid, h.bounds.shape[0], h.shifted(first))
        first, last = v.span()
        mid = _horizontal(img[first:last], h.bounds.shape[0], h)
        return _vertical(mid, v.bounds.shape[0], v.shifted(first))
    if h is not None:
        return _horizontal(img, h.bounds.shape[0], h)
    if v is not None:
        return _vertical(img, v.bounds.shape[0], v)
    return img.copy()


# ---------------------------------------------------------------------------
# Fused normalize + patchify (docs/kernels.md, "Qwen-VL merged blocks", "Inkling bf16")
# ---------------------------------------------------------------------------


def patchify_qwen(
    frames: np.ndarray, lut: np.ndarray | None, ps: int, merge: int, tps: int, out: np.ndarray | None = None
) -> np.ndarray:
    """``[gh*gw, 3*tps*ps*ps]`` of ``frames`` (``[h, w, 3]``, repeated into every temporal
    slot, or ``[tps, h, w, 3]``, one frame per slot) through the ``[3, 256]`` table, f32 (or
    uint16 bf16 bits from a uint16 table); with ``lut=None`` the uint8 pixels themselves in
    the same layout."""
    frames = frames if frames.strides[-1] == 1 and frames.strides[-2] == 3 else np.ascontiguousarray(frames)
    h, w = frames.shape[-3:-1]
    if lut is not None:
        lut = np.ascontiguousarray(lut, np.uint16 if lut.dtype == np.uint16 else np.float32)
    if out is None:
        out = np.empty(((h // ps) * (w // ps), 3 * tps * ps * ps), np.uint8 if lut is None else lut.dtype)
    bh = h // (ps * merge) if ps > 0 and merge > 0 else 0

    def run(lo: int, hi: int) -> None:
        _call("patchify_qwen", frames, lut, out, ps, merge, tps, lo, hi)

    par.for_chunks(run, max(bh, 1), _rows(max(bh, 1), h * w))
    return out


def patchify_bf16(rgb: np.ndarray, lut: np.ndarray, pad: np.ndarray, ps: int) -> np.ndarray:
    """uint16 ``[nph*npw, ps, ps, 3]`` bf16 bits of Inkling's patch layout (``npw = w//ps + 1``)."""
    rgb = _row_contiguous(rgb)
    h, w = rgb.shape[:2]
    nph, npw = (-(-h // ps), w // ps + 1) if ps > 0 else (1, 1)
    out = np.empty((nph * npw, max(ps, 1), max(ps, 1), 3), np.uint16)

    def run(lo: int, hi: int) -> None:
        _call("patchify_bf16", rgb, lut, pad, out, ps, lo, hi)

    par.for_chunks(run, nph, _rows(nph, h * w))
    return out


def rgb_from_arrow(im: object) -> np.ndarray | None:
    """HWC uint8 pixels of a loaded ``RGB`` Pillow image, packed from the 4-byte pixels its
    Arrow export shares without a copy; None when Pillow exports no single block (an
    image spread over several blocks) or something other than Pillow 13's layout."""
    try:
        schema, array = im.__arrow_c_array__()
    except (AttributeError, ValueError):
        return None
    w, h = im.size
    out = np.empty((h, w, 3), np.uint8)
    lib = _lib()
    try:
        lib.rgbx_to_rgb(schema, array, out)
    except lib.KernelError:
        return None
    return out


def norm_chw(rgb: np.ndarray, ops: np.ndarray, consts: np.ndarray, out: np.ndarray, bf16: bool, lo: int,
             hi: int) -> None:
    """Rows ``[lo, hi)`` of HWC uint8 ``rgb`` through the program ``ops`` (int32 ``[n]``: 0 add,
    1 subtract, 2 multiply, 3 divide) with its float32 ``consts`` ``[n, 3]`` into ``out``:
    float32 ``[3, h, w]``, or with ``bf16`` uint16 bfloat16 bits."""
    _call("norm_chw", _row_contiguous(rgb), ops, consts, out, bf16, lo, hi)


def planes_u8(rgb: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    """Rows ``[lo, hi)`` of HWC uint8 ``rgb`` split into the uint8 ``[3, h, w]`` ``out`` (rows of
    ``rgb`` may lie any stride apart)."""
    _call("planes_u8", _row_contiguous(rgb), out, lo, hi)


def lut_chw_u16(rgb: np.ndarray, lut: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    """Rows ``[lo, hi)`` of HWC uint8 ``rgb`` through the uint16 ``[3, 256]`` ``lut`` into the
    uint16 ``[3, h, w]`` ``out`` (rows of ``rgb`` may lie any stride apart: a tile of a canvas)."""
    _call("lut_chw_u16", _row_contiguous(rgb), lut, out, lo, hi)
