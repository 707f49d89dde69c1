"""The model-agnostic functions of the seed's Python API (core-contracts §15.1).

Thin, argument-checking entry points over the core modules, with the seed's names and
return shapes, so code written against the seed's ``common`` module ports by changing
one import. Arrays are numpy; every bad argument raises an :class:`~.errors.MmError`
subclass that is also a ``ValueError`` (``MediaError`` for arrays, sizes and data,
``SpecError`` for processing parameters).

Two return shapes differ from the seed on purpose: the seed's ``resize_rgb`` and
``image_decode_rgb`` return flat ``uint8`` buffers, these return the same bytes as an
``(h, w, 3)`` HWC array (``arr.reshape(-1)`` gives the seed's value without a copy).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from . import decode as _decode
from . import fetch as _fetch
from . import hashing as _hashing
from . import resize as _resize
from . import transforms as _transforms
from .errors import InvalidInputError, MediaError, SpecError
from .spec_fields import SpecFields

BytesLike = bytes | bytearray | memoryview


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def check_rgb_array(arr: Any, what: str = "array") -> np.ndarray:
    """``arr`` if it is a non-empty C-contiguous ``uint8`` HWC array with 3 channels.

    Raises :class:`MediaError` with the seed's messages (``"array must be C-contiguous"``,
    ``"expected HWC RGB array with 3 channels, got {c}"``) or a like one for the dtype,
    rank and empty cases the seed's type signature rejected before its body ran.
    """
    if not isinstance(arr, np.ndarray):
        raise MediaError(f"{what}: expected a numpy uint8 HWC array, got {type(arr).__name__}")
    if arr.dtype != np.uint8:
        raise MediaError(f"{what}: expected a uint8 array, got {arr.dtype}")
    if arr.ndim != 3:
        raise MediaError(f"{what}: expected an HWC array (3 dimensions), got shape {arr.shape}")
    if arr.shape[2] != 3:
        raise MediaError(f"expected HWC RGB array with 3 channels, got {arr.shape[2]}")
    if not arr.flags.c_contiguous:
        raise MediaError("array must be C-contiguous")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise MediaError(f"{what}: empty image ({arr.shape[1]}x{arr.shape[0]})")
    return arr


def check_bytes(data: Any, what: str = "data") -> bytes:
    """``data`` as ``bytes`` (bytearray and memoryview are copied), else ``InvalidInputError``."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise InvalidInputError(f"{what}: expected bytes, got {type(data).__name__}")


def check_rescale_args(rescale_frac: Any, rescale_cap: Any) -> tuple[float | None, int | None]:
    """Validate the long-edge rescale arguments of :func:`scaled_dims`.

    ``rescale_frac``: ``None`` or a finite real > 0 (a NaN or infinite factor has no
    meaningful size). ``rescale_cap``: ``None`` or an int > 0. Raises :class:`SpecError`
    naming the argument. Callers with stricter rules (Inkling: a cap needs a factor > 1)
    add them on top.
    """
    f = SpecFields.arguments(rescale_frac=rescale_frac, rescale_cap=rescale_cap)
    return f.number("rescale_frac", positive=True, nullable=True), f.integer("rescale_cap", minimum=1, nullable=True)


def resize_rgb(arr: np.ndarray, out_w: int, out_h: int, resample: str = "pil_lanczos") -> np.ndarray:
    """Resize a C-contiguous HWC uint8 RGB array to ``(out_h, out_w, 3)``.

    ``resample``: ``"pil_lanczos"`` (the Inkling default), ``"pil_bicubic"`` or
    ``"aten_u8"``, each bit-exact with its reference (:mod:`mm_framework.resize`).
    An unchanged size returns a copy.
    """
    _resize.check_resample(resample)
    check_rgb_array(arr)
    if not (_is_int(out_w) and _is_int(out_h)):
        raise SpecError(f"output size must be ints, got {type(out_w).__name__} x {type(out_h).__name__}")
    if out_w <= 0 or out_h <= 0:
        raise SpecError(f"output size must be positive, got {out_w}x{out_h}")
    return _resize.resize_rgb(arr, int(out_w), int(out_h), resample)


def scaled_dims(
    w: int, h: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> tuple[int, int]:
    """Long-edge rescale ``(w, h) -> (w', h')`` (core-contracts §13), as the seed computes it.

    ``rescale_frac=None`` or a zero long side leave the size unchanged; the cap only
    limits growth. A cap is accepted with any factor here (the seed's ``(80, 60, 0.9, 40)``
    gives ``(72, 54)``); Inkling's stricter rule lives in the Inkling API.
    """
    if not (_is_int(w) and _is_int(h)) or w < 0 or h < 0:
        raise MediaError(f"scaled_dims: width and height must be non-negative ints, got {w!r} x {h!r}")
    frac, cap = check_rescale_args(rescale_frac, rescale_cap)
    return _transforms.scaled_dims(int(w), int(h), frac, cap)


def image_decode_rgb(data: BytesLike) -> tuple[int, int, np.ndarray]:
    """Decode encoded image bytes to ``(h, w, rgb)``, ``rgb`` a read-only ``(h, w, 3)`` uint8 array.

    The seed's decode: first frame, alpha dropped (not composited), grayscale replicated,
    no EXIF orientation, samples wider than 8 bits rejected (``MediaError``).
    """
    img = _decode.decode_rgb(check_bytes(data))
    return img.height, img.width, img.rgb


def content_hash(data: BytesLike) -> int:
    """blake3 of ``data``, first 8 digest bytes as a big-endian unsigned int (core-contracts §8)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidInputError(f"content_hash: expected bytes, got {type(data).__name__}")
    return _hashing.content_hash(data)


def fetch_bytes(source: str) -> bytes:
    """The raw bytes of one media source string (data URL, base64, file path or URI, http(s)).

    One source's byte cap (64 MiB) applies; see :mod:`mm_framework.fetch` for the forms.
    """
    if not isinstance(source, str):
        raise InvalidInputError(f"fetch_bytes: expected a str source, got {type(source).__name__}")
    return _fetch.fetch_bytes(source)


def base64_decode(s: str) -> bytes:
    """Standard-alphabet base64 with canonical padding, as the fetch path decodes it.

    Unlike a base64 *source* (which is trimmed first, core-contracts §7.2), the seed's
    ``base64_decode`` does not trim: any whitespace, also at the ends, is a ``MediaError``.
    """
    if not isinstance(s, str):
        raise InvalidInputError(f"base64_decode: expected str, got {type(s).__name__}")
    if s != s.strip():
        at = 0 if s[:1].isspace() else len(s.rstrip())
        raise MediaError(f"base64 decode error: invalid symbol {s[at]!r} at offset {at} (whitespace is not trimmed)")
    return _fetch.base64_decode_strict(s)


__all__ = [
    "base64_decode", "check_bytes", "check_rescale_args", "check_rgb_array", "content_hash", "fetch_bytes",
    "image_decode_rgb", "resize_rgb", "scaled_dims",
]
