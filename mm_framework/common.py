"""The model-agnostic functions of the seed's Python API (docs/architecture.md, "The seed API").

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

from typing import Any

import numpy as np

from . import media as _media
from .checks import check_bytes, check_rgb, is_int
from .errors import InvalidInputError, MediaError, SpecError
from .kernels import resize as _resize
from .kernels import sizing as _sizing
from .spec_fields import SpecFields

BytesLike = bytes | bytearray | memoryview


def check_rgb_array(arr: Any, what: str = "array") -> np.ndarray:
    """``arr`` if it is a non-empty C-contiguous ``uint8`` HWC array with 3 channels, with
    the seed's messages (``"array must be C-contiguous"``, ``"expected HWC RGB array with 3
    channels, got {c}"``); :class:`MediaError` otherwise."""
    return check_rgb(arr, what, contiguous=True)


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
    ``"aten_u8"``, each bit-exact with its reference (:mod:`mm_framework.kernels.resize`).
    An unchanged size returns a copy.
    """
    _resize.check_resample(resample)
    check_rgb_array(arr)
    if not (is_int(out_w) and is_int(out_h)):
        raise SpecError(f"output size must be ints, got {type(out_w).__name__} x {type(out_h).__name__}")
    if out_w <= 0 or out_h <= 0:
        raise SpecError(f"output size must be positive, got {out_w}x{out_h}")
    return _resize.resize_rgb(arr, int(out_w), int(out_h), resample)


def scaled_dims(
    w: int, h: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> tuple[int, int]:
    """Long-edge rescale ``(w, h) -> (w', h')`` (docs/architecture.md, "Sizing"), as the seed computes it.

    ``rescale_frac=None`` or a zero long side leave the size unchanged; the cap only
    limits growth. A cap is accepted with any factor here (the seed's ``(80, 60, 0.9, 40)``
    gives ``(72, 54)``); Inkling's stricter rule lives in the Inkling API.
    """
    if not (is_int(w) and is_int(h)) or w < 0 or h < 0:
        raise MediaError(f"scaled_dims: width and height must be non-negative ints, got {w!r} x {h!r}")
    frac, cap = check_rescale_args(rescale_frac, rescale_cap)
    return _sizing.scaled_dims(int(w), int(h), frac, cap)


def image_decode_rgb(data: BytesLike) -> tuple[int, int, np.ndarray]:
    """Decode encoded image bytes to ``(h, w, rgb)``, ``rgb`` a read-only ``(h, w, 3)`` uint8 array.

    The seed's decode: first frame, alpha dropped (not composited), grayscale replicated,
    no EXIF orientation, samples wider than 8 bits rejected (``MediaError``).
    """
    img = _media.decode_rgb(data)
    return img.height, img.width, img.rgb


def content_hash(data: BytesLike) -> int:
    """blake3 of ``data``, first 8 digest bytes as a big-endian unsigned int (docs/architecture.md, "Content hash")."""
    return _media.content_hash(data)


def fetch_bytes(source: str) -> bytes:
    """The raw bytes of one media source string (data URL, base64, file path or URI, http(s)).

    One source's byte cap (64 MiB) applies; see :mod:`mm_framework.media.sources` for the forms.
    """
    if not isinstance(source, str):
        raise InvalidInputError(f"fetch_bytes: expected a str source, got {type(source).__name__}")
    return _media.fetch_bytes(source)


def base64_decode(s: str) -> bytes:
    """Standard-alphabet base64 with canonical padding, as the fetch path decodes it.

    Unlike a base64 *source* (which is trimmed first), the seed's
    ``base64_decode`` does not trim: any whitespace, also at the ends, is a ``MediaError``.
    """
    if not isinstance(s, str):
        raise InvalidInputError(f"base64_decode: expected str, got {type(s).__name__}")
    if s != s.strip():
        at = 0 if s[:1].isspace() else len(s.rstrip())
        raise MediaError(f"base64 decode error: invalid symbol {s[at]!r} at offset {at} (whitespace is not trimmed)")
    return _media.base64_decode_strict(s)


__all__ = [
    "base64_decode", "check_bytes", "check_rescale_args", "check_rgb_array", "content_hash", "fetch_bytes",
    "image_decode_rgb", "resize_rgb", "scaled_dims",
]
