"""Default decoder: Pillow to RGB uint8 HWC, with limits checked from the header.

Decoding with Pillow (not another codec) is what makes JPEG bit-exact with the Python
reference, whose processors receive Pillow-decoded images.
"""

from __future__ import annotations

import io
import re

import numpy as np
from PIL import Image, ImageOps

from .carriers import DecodedImage, DecodeOptions
from .errors import LimitExceededError, MediaError

# Modes whose samples are wider than 8 bits. Pillow's convert("RGB") clamps them to 255
# instead of rescaling, so no u8 conversion is faithful to the pixels: refuse instead.
# Register every format plugin once: Image.open(formats=...) looks names up in the
# registry and fails on a format whose plugin was not imported yet (WEBP).
Image.init()

_OBJECT_REPR = re.compile(r"\s*<[\w.]+ object at 0x[0-9a-f]+>")

_DEEP_MODES = frozenset({"I", "F", "I;16", "I;16B", "I;16L", "I;16N", "I;16S", "I;32", "I;32B", "I;32L"})


def open_image(data: bytes, *, max_pixels: int | None, formats: tuple[str, ...] | None = None) -> Image.Image:
    """Open ``data`` and check its declared size; no pixels are decoded yet."""
    try:
        im = Image.open(io.BytesIO(data), formats=formats)
    except Image.DecompressionBombError as e:
        # Pillow's own bomb guard fired first (the declared size is above twice its
        # MAX_IMAGE_PIXELS); same verdict as ours, from the header alone.
        raise LimitExceededError(f"image above the pixel limit: {e}") from None
    except Exception as e:  # Pillow signals bad data with many exception types
        raise MediaError(f"image decode: {_describe(e)}") from None
    w, h = im.size
    if w <= 0 or h <= 0:
        raise MediaError(f"image decode: empty image ({w}x{h})")
    if max_pixels is not None and w * h > max_pixels:
        raise LimitExceededError(f"image is {w}x{h} = {w * h} pixels, above the limit of {max_pixels}")
    return im


def image_size(data: bytes) -> tuple[int, int]:
    """``(width, height)`` from the header alone."""
    return open_image(data, max_pixels=None).size


def decode_rgb(data: bytes, options: DecodeOptions = DecodeOptions()) -> DecodedImage:
    """Decode to RGB u8: first frame only, EXIF transpose and alpha as ``options`` say.

    ``alpha="composite"`` blends onto opaque white exactly as transformers'
    ``convert_to_rgb`` does for PIL images (also for palette transparency);
    ``"drop"`` is Pillow's ``convert("RGB")``.
    """
    im = open_image(data, max_pixels=options.max_pixels, formats=options.formats)
    try:
        im.load()
        if im.mode in _DEEP_MODES:
            raise MediaError(f"image decode: unsupported color mode {im.mode} (samples wider than 8 bits)")
        if options.exif_transpose:
            im = ImageOps.exif_transpose(im)
        if options.alpha == "composite" and ("A" in im.getbands() or im.info.get("transparency") is not None):
            rgba = im.convert("RGBA")
            white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
            im = Image.alpha_composite(white, rgba).convert("RGB")
        elif im.mode != "RGB":
            im = im.convert("RGB")
        rgb = np.asarray(im)
    except MediaError:
        raise
    except Exception as e:
        raise MediaError(f"image decode: {_describe(e)}") from None
    return DecodedImage(rgb=rgb)


def _describe(e: BaseException) -> str:
    # Pillow names the in-memory file by its repr; an address would make error messages
    # differ between identical requests.
    text = _OBJECT_REPR.sub("", str(e)).strip() or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "..."
