"""Rescale + normalize as exact ``[3, 256]`` float32 tables, and the f32 programs that
reproduce them.

Rescale and normalize are a per-channel function of the u8 value, so a table per
channel is exact for any formula; the variants below differ only in f32 rounding and
each mirrors one reference bit for bit (docs/architecture.md, "Normalization tables").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from .. import par
from ..errors import InternalError, SpecError
from . import native

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

    Multiplies by the f32 reciprocal of 255 rather than dividing (docs/families/inkling.md).
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
# The native kernel's operation codes (native.norm_chw).
_OPS = {np.add: 0, np.subtract: 1, np.multiply: 2, np.divide: 3}
NativeProgram = tuple[np.ndarray, np.ndarray]  # (ops int32 [n], constants f32 [n, 3])


def native_program(steps: Sequence[Step] | None, want: np.ndarray, bf16: bool) -> NativeProgram | None:
    """``steps`` as the native kernel's program, when the kernel is built and gives ``want``
    (the ``[3, 256]`` table: float32, or with ``bf16`` uint16 bfloat16 bits) for all 256
    values of every channel; else ``None``. The kernel does each step as one correctly
    rounded float32 operation, as numpy's ufuncs do; this check makes sure of it here."""
    if steps is None or not native.built() or not 0 < len(steps) <= 8 or any(u not in _OPS for u, _ in steps):
        return None
    ops = np.array([_OPS[u] for u, _ in steps], dtype=np.int32)
    consts = np.ascontiguousarray(np.stack([k for _, k in steps]), dtype=np.float32)
    probe = np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 3, axis=2)
    out = np.empty((3, 1, 256), dtype=want.dtype)
    native.norm_chw(probe, ops, consts, out, bf16, 0, 1)
    if out.tobytes() != want.tobytes():
        return None
    for a in (ops, consts):
        a.flags.writeable = False
    return ops, consts


def run_native_program(program: NativeProgram, rgb: np.ndarray, out: np.ndarray, bf16: bool) -> None:
    """``program`` on HWC uint8 ``rgb`` into the dense planes ``out``, a band of rows per task."""
    height, width = rgb.shape[:2]

    def run(a: int, b: int) -> None:
        native.norm_chw(rgb, *program, out, bf16, a, b)

    par.for_chunks(run, height, par.rows_per_worker(height, height * width))


def _table(lut: Any) -> np.ndarray:
    if not isinstance(lut, np.ndarray) or lut.dtype != np.float32 or lut.shape != (3, 256):
        raise InternalError(f"normalize table must be float32 [3, 256], got {getattr(lut, 'shape', type(lut))}")
    lut = lut.copy()
    lut.flags.writeable = False
    return lut


@attrs.frozen(eq=False)
class ChannelNorm:
    """Rescale + normalize of u8 values: the exact ``[3, 256]`` f32 ``lut`` and, when a
    program reproduces every entry bit for bit, its f32 ``steps`` (else ``None``: gather).

    A program is a sequence of ``(ufunc, constants)``: start from ``f32(v)`` and apply
    ``x = ufunc(x, constants[c])`` in order. Build one with :meth:`search`.
    """

    lut: np.ndarray = attrs.field(converter=_table)
    steps: tuple[Step, ...] | None = None
    #: ``steps`` for the native kernel, checked against ``lut`` (None: numpy runs them).
    native_steps: NativeProgram | None = attrs.field(
        init=False, eq=False, default=attrs.Factory(lambda self: native_program(self.steps, self.lut, False),
                                                    takes_self=True))

    def apply(self, c: int, values: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = lut[c][values]`` for the u8 ``values`` of channel ``c``, into the f32 ``out``
        of the same shape: the program run on ``out`` when there is one, else the gather."""
        if self.steps is None:
            # uint8 indices are always in range: "clip" only skips the bounds check.
            return np.take(self.lut[c], values, out=out, mode="clip")
        np.copyto(out, values)
        return _run_steps(self.steps, c, out)

    def apply_image(self, rgb: np.ndarray, out: np.ndarray) -> None:
        """HWC uint8 ``rgb`` -> ``out`` float32 ``[3, h, w]`` (one tile or image in a model's
        CHW layout), a band of rows per task on :func:`mm_framework.par.for_chunks`: the
        native program when it is in use (one pass over the pixels instead of numpy's three
        per channel: 1.6 -> 0.8 ms for 896x896), else numpy's; the same bits. The native
        kernel writes whole planes: an ``out`` that is a window of larger ones goes to numpy."""
        if self.native_steps is not None and native.use_native() and out.flags.c_contiguous:
            run_native_program(self.native_steps, rgb, out, False)
            return
        height, width = rgb.shape[:2]

        def run(a: int, b: int) -> None:
            for c in range(3):
                self.apply(c, rgb[a:b, :, c], out[c, a:b])

        par.for_chunks(run, height, par.rows_per_worker(height, height * width))

    @classmethod
    def search(cls, lut: np.ndarray, candidates: Sequence[Sequence[Step]]) -> ChannelNorm:
        """The norm of ``lut`` with the first candidate program that reproduces it."""
        norm = cls(lut)
        for program in candidates:
            steps = tuple((ufunc, _const3(k)) for ufunc, k in program)
            if _program_matches(steps, norm.lut):
                return attrs.evolve(norm, steps=steps)
        return norm


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
    return ChannelNorm.search(normalize_lut_pil(mean, std, rescale_factor), programs)


def channel_norm_fused(mean: Sequence[float], std: Sequence[float], rescale_factor: float = 1 / 255) -> ChannelNorm:
    """:func:`normalize_lut_fused` with its arithmetic (``(v - mean') / std'`` in f32)."""
    m, s = _channel_params(mean, std)
    k = np.float32(1.0 / float(rescale_factor))
    return ChannelNorm.search(
        normalize_lut_fused(mean, std, rescale_factor), [[(np.subtract, m * k), (np.divide, s * k)]]
    )


def channel_norm_steps(arithmetic: str, mean: Sequence[float], std: Sequence[float], rescale_factor: float,
                       *, do_rescale: bool = True, do_normalize: bool = True) -> ChannelNorm:
    """The table of a processor whose ``do_rescale`` / ``do_normalize`` switches may be off.

    ``arithmetic`` ``"pil"`` is transformers' PIL backend (``rescale`` then ``normalize``, a
    disabled step the identity: ``x - 0`` and ``x / 1`` are exact in f32 and rescale 1 is
    ``f32(f64(v)) = v``). Besides its three-step program, ``v / (std / rescale) - mean / std``
    is offered: two f32 passes, kept only where it gives the table's bits on all 256 values
    (it does for mean = std = 0.5). ``"fused"`` is ``TorchvisionBackend.rescale_and_normalize``:
    with normalize the fused ``(f32(v) - mean') / std'`` (factor 1 when rescale is off);
    rescale alone ``uint8 tensor * rescale_factor``, which torch computes as ``f32(v) * f32(r)``.
    Both switches off is the caller's to refuse: the reference then returns uint8 pixels.
    """
    if not (do_rescale or do_normalize):
        raise SpecError("do_rescale and do_normalize cannot both be off (the output would be uint8 pixels)")
    if arithmetic == "fused":
        if do_normalize:
            return channel_norm_fused(mean, std, rescale_factor if do_rescale else 1.0)
        r = np.float32(rescale_factor)
        lut = np.repeat((np.arange(256, dtype=np.float32) * r)[None, :], 3, axis=0)
        return ChannelNorm.search(lut, [[(np.multiply, r)]])
    if arithmetic != "pil":
        raise InternalError(f"channel_norm_steps: unknown arithmetic {arithmetic!r} (pil, fused)")
    if not do_normalize:
        mean, std = (0.0,) * 3, (1.0,) * 3
    rescale = rescale_factor if do_rescale else 1.0
    table = channel_norm_pil(mean, std, rescale)
    m, s = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    programs = [[(np.divide, s / rescale), (np.subtract, m / s)]]
    if table.steps is not None:
        programs.append(list(table.steps))
    return ChannelNorm.search(table.lut, programs)
