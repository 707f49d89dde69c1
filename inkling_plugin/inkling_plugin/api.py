"""The seed's ``inkling`` Python API (docs/families/inkling.md), as numpy functions.

Each function validates its arguments first (``patch_size`` > 0, ``rescale_frac``
finite and > 0, ``rescale_cap`` > 0 and only with ``rescale_frac`` > 1, arrays C-contiguous
HWC uint8 with 3 channels), raising ``ValueError``-compatible ``MmError`` subclasses:
``SpecError`` for parameters, ``MediaError`` for arrays and undecodable data,
``InvalidInputError`` for wrong argument types, ``LimitExceededError`` for a rescale past
the pixel limit. Batch errors name the failing item (``"item 2: image decode: ..."``);
the lowest failing index wins.

Return shape: ``bits`` is ``uint16 [n, ps, ps, 3]`` (bf16 bit patterns, patch-major,
HWC inside a patch), where the seed returned the same values flat; ``bits.reshape(-1)``
is the seed's array, without a copy. ``h, w`` are always the post-rescale size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from PIL import Image

from mm_framework import content_hash
from mm_framework.plugin import InvalidInputError, LimitExceededError, MmError, decode_rgb
from mm_framework.kernels import check_rgb, resize_rgb, scaled_dims, try_map

from .params import MAX_PIXELS, check_params, check_patch_size
from .patchify import patchify

Patched = tuple[int, int, np.ndarray]
PatchedHashed = tuple[int, int, np.ndarray, int]


def rescaled_size(w: int, h: int, frac: float | None, cap: int | None) -> tuple[int, int]:
    """``scaled_dims`` of a ``w x h`` image, refusing results above the pixel limit.

    A large ``rescale_frac`` without a cap could otherwise turn a small image into an
    allocation of any size; the bound is the core's default decode limit (Pillow's own
    decompression-bomb threshold), so nothing a reference accepts from a file is refused.
    """
    w2, h2 = scaled_dims(w, h, frac, cap)
    if w2 * h2 > MAX_PIXELS:
        raise LimitExceededError(
            f"rescaling {w}x{h} gives {w2}x{h2} = {w2 * h2} pixels, above the limit of {MAX_PIXELS}"
        )
    return w2, h2


def rescale_patchify(
    rgb: np.ndarray, ps: int, frac: float | None, cap: int | None, source: Image.Image | None = None
) -> Patched:
    """``scaled_dims`` + Pillow LANCZOS when the size changes, then :func:`patchify`.

    ``source``: the Pillow image ``rgb`` was exported from, if the caller has it
    (:func:`mm_framework.take_source`); the resize then starts from it.
    """
    h, w = int(rgb.shape[0]), int(rgb.shape[1])
    w2, h2 = rescaled_size(w, h, frac, cap)
    if (w2, h2) != (w, h):
        rgb = resize_rgb(rgb, w2, h2, "pil_lanczos", source=source)
    return h2, w2, patchify(rgb, ps)


def _decode_patchify(data: bytes, ps: int, frac: float | None, cap: int | None) -> Patched:
    # The seed's decode: no alpha compositing, no EXIF orientation (the core defaults).
    return rescale_patchify(decode_rgb(data).rgb, ps, frac, cap)


def _datas(datas: Any) -> list[bytes]:
    if isinstance(datas, (bytes, bytearray, memoryview, str)) or not isinstance(datas, Sequence):
        raise InvalidInputError(f"datas must be a sequence of bytes objects, got {type(datas).__name__}")
    return list(datas)


def _per_item(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``fn`` over ``items`` on the fan-out seam, errors attributed to their item."""

    def one(i: int, x: Any) -> Any:
        try:
            return fn(x)
        except MmError as e:
            raise e.at_item(i) from None

    return try_map(one, items)


def patchify_rgb(arr: np.ndarray, patch_size: int) -> np.ndarray:
    """bf16 bits ``uint16 [n, ps, ps, 3]`` of a C-contiguous HWC uint8 RGB array (no rescale)."""
    ps = check_patch_size(patch_size)
    return patchify(check_rgb(arr, contiguous=True), ps)


def decode_patchify(
    data: bytes, patch_size: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> Patched:
    """Decode, rescale (``scaled_dims`` + LANCZOS) and patchify: ``(h, w, bits)``."""
    ps, frac, cap = check_params(patch_size, rescale_frac, rescale_cap)
    return _decode_patchify(data, ps, frac, cap)


def decode_patchify_batch(
    datas: Sequence[bytes], patch_size: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> list[Patched]:
    """:func:`decode_patchify` of each item, fanned out, in input order."""
    ps, frac, cap = check_params(patch_size, rescale_frac, rescale_cap)
    return _per_item(lambda d: _decode_patchify(d, ps, frac, cap), _datas(datas))


def preprocess_images(
    datas: Sequence[bytes], patch_size: int, rescale_frac: float | None = None, rescale_cap: int | None = None
) -> list[PatchedHashed]:
    """``(h, w, bits, hash)`` per item; ``hash`` is the content hash of the raw input bytes."""
    ps, frac, cap = check_params(patch_size, rescale_frac, rescale_cap)
    return _per_item(lambda d: (*_decode_patchify(d, ps, frac, cap), content_hash(d)), _datas(datas))


def rescale_patchify_hash(
    arr: np.ndarray,
    raw_bytes: bytes,
    patch_size: int,
    rescale_frac: float | None = None,
    rescale_cap: int | None = None,
) -> PatchedHashed:
    """Rescale and patchify an already-decoded array; ``hash`` is of ``raw_bytes``.

    For callers that decode themselves (the seed's Python processor decodes with PIL in a
    thread pool and passes the array plus the bytes it came from).
    """
    ps, frac, cap = check_params(patch_size, rescale_frac, rescale_cap)
    check_rgb(arr, contiguous=True)
    return (*rescale_patchify(arr, ps, frac, cap), content_hash(raw_bytes))
