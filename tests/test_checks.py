"""The shared argument checks: one for integers, images and raw bytes."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework.checks import check_bytes, check_int, check_rgb
from mm_framework.errors import InvalidInputError, LayoutError, MediaError, SpecError


@pytest.mark.parametrize(
    ("value", "kwargs", "match"),
    [(1.5, {}, "must be an integer, got 1.5"), (True, {}, "must be an integer, got True"),
     (0, {"minimum": 1}, "must be greater than zero, got 0"), (-1, {"minimum": 0}, "must be >= 0, got -1"),
     (9, {"maximum": 8}, "must be <= 8, got 9"), (1 << 63, {}, "must fit in int64")],
)
def test_check_int_rejects(value, kwargs, match):
    with pytest.raises(SpecError, match=f"x {match}"):
        check_int(value, "x", **kwargs)


def test_check_int_accepts_numpy_ints_and_uses_the_given_error():
    assert check_int(np.int32(7), "x", minimum=1) == 7 and type(check_int(np.int64(7), "x")) is int
    with pytest.raises(LayoutError):
        check_int(-1, "x", minimum=0, error=LayoutError)


@pytest.mark.parametrize(
    ("arr", "kwargs", "match"),
    [([[1, 2, 3]], {}, "expected a numpy uint8 HWC array, got list"),
     (np.zeros((2, 2, 3), np.float32), {}, "expected a uint8 array"),
     (np.zeros((2, 2), np.uint8), {}, r"expected an HWC array \(3 dimensions\)"),
     (np.zeros((2, 2, 4), np.uint8), {}, "expected HWC RGB array with 3 channels, got 4"),
     (np.zeros((4, 4, 3), np.uint8)[:, ::2], {"contiguous": True}, "array must be C-contiguous"),
     (np.zeros((0, 4, 3), np.uint8), {}, r"empty image \(4x0\)")],
)
def test_check_rgb_rejects(arr, kwargs, match):
    with pytest.raises(MediaError, match=match):
        check_rgb(arr, "img", **kwargs)


def test_check_rgb_accepts_strided_views_unless_asked():
    view = np.zeros((4, 4, 3), np.uint8)[:, ::2]
    assert check_rgb(view) is view


def test_check_bytes():
    assert check_bytes(bytearray(b"ab")) == b"ab" and check_bytes(memoryview(b"ab")) == b"ab"
    with pytest.raises(InvalidInputError, match="data: expected bytes, got str"):
        check_bytes("ab")
