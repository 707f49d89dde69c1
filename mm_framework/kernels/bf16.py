"""bfloat16 as uint16 bit patterns (numpy has no bfloat16), and the exact rescale +
normalize of a processor that runs it in bfloat16 (transformers' ``Llama4ImageProcessor``).

torch rounds float32 to bfloat16 to nearest even (NaN to the quiet NaN ``0x7FC0``) and
computes each bfloat16 elementwise op in float32, rounding the result; a tensor-scalar
product takes the Python scalar as float32. The tables below replay those roundings per
u8 value, so they are exact for all 256 inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from .. import par
from ..errors import InternalError, SpecError
from . import native
from .norm import ChannelNorm, NativeProgram, _channel_params, native_program, run_native_program

_NAN_BITS = np.uint16(0x7FC0)


def bf16_bits(x: np.ndarray | float) -> np.ndarray:
    """float32 values -> uint16 bfloat16 bits, rounded to nearest even as torch rounds."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), _NAN_BITS, bits)


def bf16_widen(bits: np.ndarray) -> np.ndarray:
    """uint16 bfloat16 bits -> the float32 values they stand for (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _round(x: np.ndarray) -> np.ndarray:
    return bf16_widen(bf16_bits(x))


@attrs.frozen
class Bf16Norm:
    """``norm``'s float32 values rounded to bfloat16 as ``tensor.to(torch.bfloat16)`` rounds
    them: what an engine that casts a processor's float32 outputs to a bfloat16 model
    receives. ``lut`` is the ``[3, 256]`` uint16 table of their bits."""

    norm: ChannelNorm
    lut: np.ndarray = attrs.field(
        init=False, eq=False, default=attrs.Factory(lambda self: _frozen(bf16_bits(self.norm.lut)), takes_self=True)
    )
    #: The norm's steps for the native kernel, rounding to bfloat16, checked against ``lut``.
    native_steps: NativeProgram | None = attrs.field(
        init=False, eq=False, default=attrs.Factory(lambda self: native_program(self.norm.steps, self.lut, True),
                                                    takes_self=True))

    def apply_image(self, rgb: np.ndarray, out: np.ndarray) -> None:
        """HWC uint8 ``rgb`` -> ``out`` uint16 ``[3, h, w]`` bf16 bits: the native program when
        it is in use (one pass of float32 arithmetic: 1.7 -> 1.0 ms for 896x896), else the
        table (:func:`apply_bf16_lut`); the same bits (the table too where ``out`` is a window
        of larger planes: the kernel writes whole ones)."""
        if self.native_steps is not None and native.use_native() and out.flags.c_contiguous:
            run_native_program(self.native_steps, rgb, out, True)
        else:
            apply_bf16_lut(self.lut, rgb, out)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def normalize_lut_bf16(mean: Sequence[float], std: Sequence[float], rescale_factor: float) -> np.ndarray:
    """``[3, 256]`` uint16 bf16 bits of ``normalize(bf16(v) * rescale_factor, mean, std)`` in
    bfloat16: ``Llama4ImageProcessor.rescale_and_normalize`` (``images.to(bfloat16) *
    rescale_factor``, then ``tvF.normalize``, which casts mean and std to the image's
    bfloat16 and runs ``sub_`` then ``div_``)."""
    m, s = (_round(a) for a in _channel_params(mean, std))
    if (s == 0).any():
        raise SpecError(f"std must be non-zero in bfloat16, got std={list(std)}")
    x = _round(_round(np.arange(256, dtype=np.float32)) * np.float32(rescale_factor))
    return np.ascontiguousarray(bf16_bits(_round(x[None, :] - m[:, None]) / s[:, None]))


def apply_bf16_lut(lut: np.ndarray, rgb: np.ndarray, out: np.ndarray) -> None:
    """HWC uint8 ``rgb`` -> ``out`` uint16 ``[3, h, w]`` (bf16 bits, a model's CHW layout)
    through the ``[3, 256]`` table ``lut``, a band of rows per task on :func:`par.for_chunks`
    (the native kernel when it is in use, else numpy's gather: the same bits)."""
    if lut.dtype != np.uint16 or lut.shape != (3, 256):
        raise InternalError(f"bf16 table must be uint16 [3, 256], got {lut.dtype} {lut.shape}")
    height, width = rgb.shape[:2]

    if native.use_native():
        def run(a: int, b: int) -> None:
            native.lut_chw_u16(rgb, lut, out, a, b)
    else:
        def run(a: int, b: int) -> None:
            for c in range(3):
                # uint8 indices are always in range: "clip" only skips the bounds check.
                np.take(lut[c], rgb[a:b, :, c], out=out[c, a:b], mode="clip")

    par.for_chunks(run, height, par.rows_per_worker(height, height * width))
