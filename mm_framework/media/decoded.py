"""Items given as pixels: a ``PIL.Image.Image`` or a ``uint8`` numpy array.

They skip fetching and decoding, but not the limits (pixels, the request's byte budget)
nor the family's conversion: a PIL image goes through the same ``pil_to_rgb`` as a
decoded file (the family's alpha handling; EXIF orientation only when the spec asks), as
transformers treats a PIL object. Arrays are ``[H, W, 3]`` RGB or ``[H, W]`` grey (grey is
replicated, as Pillow's ``L`` to ``RGB``).

The content hash of a decoded item is blake3 in key-derivation mode (its own context
string, so it can never equal the plain blake3 of any encoded source) over the mode, the
size, the EXIF orientation, the palette and transparency when present, and the pixel
bytes. Each item is copied when the request is taken, so a caller changing its image
afterwards changes nothing.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from PIL import Image

from ..carriers import DecodedImage, DecodeOptions
from ..errors import LimitExceededError, MediaError
from ..kernels.export import rgb_array
from .decode import QUARTER_TURNS, check_image_pixels, pil_to_rgb
from .hashing import LazyHash, keyed_digest
from .policy import ByteBudget

HASH_CONTEXT = "mm_framework 2026-12 decoded image v1"


@attrs.frozen(eq=False, slots=False)
class DecodedSource(LazyHash):
    """One item given as pixels, copied and measured when the request was taken; hashed on
    first use of ``hash`` (a pipeline built with ``hashes=False`` never asks)."""

    image: Image.Image | np.ndarray = attrs.field(repr=False)
    hashed: tuple[Any, ...] = attrs.field(repr=False)  # what the hash covers, in order (module docstring)
    width: int
    height: int

    def _digest(self) -> int:
        return keyed_digest(HASH_CONTEXT, *self.hashed)

    def size(self, options: DecodeOptions) -> tuple[int, int]:
        """``(width, height)`` after the family's conversion (EXIF may turn it)."""
        if isinstance(self.image, Image.Image) and options.exif_transpose:
            return decoded_size_of_pil(self.image)
        return self.width, self.height

    def to_rgb(self, options: DecodeOptions) -> DecodedImage:
        if isinstance(self.image, np.ndarray):
            rgb = self.image if self.image.ndim == 3 else np.repeat(self.image[:, :, None], 3, axis=2)
            return DecodedImage(rgb=rgb)
        return pil_to_rgb(self.image, options)


def decoded_size_of_pil(im: Image.Image) -> tuple[int, int]:
    w, h = im.size
    return (h, w) if im.getexif().get(0x0112) in QUARTER_TURNS else (w, h)


def _from_array(arr: np.ndarray) -> tuple[np.ndarray, str]:
    if arr.dtype != np.uint8 or not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)):
        raise MediaError(
            f"decoded image: expected a uint8 array [H, W, 3] (RGB) or [H, W] (grey), got {arr.dtype} {arr.shape}"
        )
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise MediaError(f"decoded image: empty image ({arr.shape[1]}x{arr.shape[0]})")
    out = np.array(arr, dtype=np.uint8, order="C", copy=True)
    out.flags.writeable = False
    return out, "RGB" if arr.ndim == 3 else "L"


def take_decoded(src: Image.Image | np.ndarray, max_pixels: int, budget: ByteBudget) -> DecodedSource:
    """``src`` as a :class:`DecodedSource`, after the pixel limit and the byte budget."""
    if isinstance(src, np.ndarray):
        h, w = src.shape[:2] if src.ndim >= 2 else (0, 0)
    else:
        w, h = src.size
    check_image_pixels(w, h, max_pixels)
    if isinstance(src, np.ndarray):
        image, mode = _from_array(src)
        nbytes, extra, pixels = image.nbytes, b"", image.data
    else:
        if w <= 0 or h <= 0:
            raise MediaError(f"decoded image: empty image ({w}x{h})")
        mode = src.mode
        orientation, transparency = src.getexif().get(0x0112, 1), src.info.get("transparency")
        palette = src.palette.tobytes() if src.palette is not None and mode in ("P", "PA") else b""
        extra = f"{orientation}\0{transparency!r}\0".encode() + palette
        if mode == "RGB" and orientation == 1 and transparency is None:
            # Its bytes are already the decoded RGB image (nothing to turn, key out or convert):
            # exported once as an array, it is neither copied as a Pillow image nor exported again.
            image = rgb_array(src)
            pixels, nbytes = image.data, image.nbytes
        else:
            pixels, image = src.tobytes(), src.copy()
            nbytes = len(pixels)
    if not budget.claim(nbytes):
        raise LimitExceededError(f"decoded image of {nbytes} bytes exceeds the request media byte budget")
    head = f"{mode}\0{w}x{h}\0".encode()
    return DecodedSource(image=image, hashed=(head, extra, pixels), width=w, height=h)
