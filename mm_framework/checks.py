"""The argument checks every layer shares: one each for integers, images and raw bytes.

Values that cross into numpy or the native kernels are checked here and nowhere else, so
a message for the same mistake reads the same wherever it is made.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from .errors import InvalidInputError, MediaError, MmError, SpecError

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_int(value: Any) -> bool:
    """An integral value that is not a bool (``True`` is an ``int`` to Python, never to us)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def check_int(
    value: Any,
    what: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[MmError] = SpecError,
) -> int:
    """``value`` as an ``int`` within ``[minimum, maximum]`` and int64, else ``error``.

    Messages read ``"<what> must be an integer, got 2.5"``; a ``minimum`` of 1 reads
    "greater than zero" (the seed's ``patch_size`` wording).
    """
    if not is_int(value):
        raise error(f"{what} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        bound = "greater than zero" if minimum == 1 else f">= {minimum}"
        raise error(f"{what} must be {bound}, got {v}")
    if maximum is not None and v > maximum:
        raise error(f"{what} must be <= {maximum}, got {v}")
    if not INT64_MIN <= v <= INT64_MAX:
        raise error(f"{what} must fit in int64, got {v}")
    return v


def check_rgb(
    arr: Any, what: str = "array", *, contiguous: bool = False, error: type[MmError] = MediaError
) -> np.ndarray:
    """``arr`` if it is a non-empty ``uint8`` HWC array with 3 channels (C-contiguous if asked).

    The channel and contiguity messages are the seed API's (``"expected HWC RGB array
    with 3 channels, got 4"``, ``"array must be C-contiguous"``).
    """
    if not isinstance(arr, np.ndarray):
        raise error(f"{what}: expected a numpy uint8 HWC array, got {type(arr).__name__}")
    if arr.dtype != np.uint8:
        raise error(f"{what}: expected a uint8 array, got {arr.dtype}")
    if arr.ndim != 3:
        raise error(f"{what}: expected an HWC array (3 dimensions), got shape {arr.shape}")
    if arr.shape[2] != 3:
        raise error(f"expected HWC RGB array with 3 channels, got {arr.shape[2]}")
    if contiguous and not arr.flags.c_contiguous:
        raise error("array must be C-contiguous")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise error(f"{what}: empty image ({arr.shape[1]}x{arr.shape[0]})")
    return arr


def check_bytes(data: Any, what: str = "data") -> bytes:
    """``data`` as ``bytes`` (bytearray and memoryview are copied), else ``InvalidInputError``."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise InvalidInputError(f"{what}: expected bytes, got {type(data).__name__}")
