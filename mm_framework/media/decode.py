"""Default decoder: Pillow to RGB uint8 HWC, with limits checked from the header.

Decoding with Pillow (not another codec) is what makes JPEG bit-exact with the Python
reference, whose processors receive Pillow-decoded images.
"""

from __future__ import annotations

import io
import re

import attrs
import numpy as np
from PIL import Image, ImageOps

from ..carriers import DecodedImage, DecodeOptions
from ..checks import check_bytes
from ..errors import LimitExceededError, MediaError
from ..kernels.export import rgb_array

# Modes whose samples are wider than 8 bits. Pillow's convert("RGB") clamps them to 255
# instead of rescaling, so no u8 conversion is faithful to the pixels: refuse instead.
# Register every format plugin once: Image.open(formats=...) looks names up in the
# registry and fails on a format whose plugin was not imported yet (WEBP).
Image.init()

_OBJECT_REPR = re.compile(r"\s*<[\w.]+ object at 0x[0-9a-f]+>")

_DEEP_MODES = frozenset({"I", "F", "I;16", "I;16B", "I;16L", "I;16N", "I;16S", "I;32", "I;32B", "I;32L"})


# Formats outside the allowlist, told apart by their magic bytes (never by running their
# decoders), so a refusal says "unsupported format TIFF" rather than "cannot identify".
_MAGIC = (
    (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"8BPS", "PSD"), (b"\x00\x00\x01\x00", "ICO"),
    (b"\x00\x00\x02\x00", "CUR"), (b"\x00\x00\x00\x0cjP  ", "JPEG 2000"), (b"\xff\x4f\xff\x51", "JPEG 2000"),
    (b"%PDF", "PDF"), (b"%!PS", "PostScript"), (b"<svg", "SVG"), (b"<?xml", "XML/SVG"), (b"qoif", "QOI"),
    (b"DDS ", "DDS"), (b"icns", "ICNS"), (b"\x76\x2f\x31\x01", "OpenEXR"),
)
_FTYP = {b"heic": "HEIC", b"heix": "HEIC", b"mif1": "HEIF", b"avif": "AVIF", b"avis": "AVIF"}


def sniff_format(data: bytes) -> str | None:
    """The name of a known image format ``data`` starts like, among those not decoded here."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data[4:8] == b"ftyp":
        return _FTYP.get(data[8:12])
    return None


def open_image(data: bytes, *, max_pixels: int | None, formats: tuple[str, ...] | None = None) -> Image.Image:
    """Open ``data`` and check its declared size; no pixels are decoded yet."""
    try:
        im = Image.open(io.BytesIO(data), formats=formats)
    except Image.DecompressionBombError as e:
        # Pillow's own bomb guard fired first (the declared size is above twice its
        # MAX_IMAGE_PIXELS); same verdict as ours, from the header alone.
        raise LimitExceededError(f"image above the pixel limit: {e}") from None
    except Exception as e:  # Pillow signals bad data with many exception types
        known = sniff_format(data)
        if known is not None:
            allowed = ", ".join(formats or ())
            raise MediaError(f"image decode: unsupported format {known} (accepted: {allowed})") from None
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


# EXIF orientations that turn the image a quarter (width and height swap).
QUARTER_TURNS = frozenset({5, 6, 7, 8})


def decoded_size(data: bytes, options: DecodeOptions) -> tuple[int, int]:
    """``(width, height)`` :func:`decode_rgb` would give, from the header alone (limits
    and formats checked as there); the EXIF orientation counts when it is applied."""
    im = open_image(check_bytes(data), max_pixels=options.max_pixels, formats=options.formats)
    w, h = im.size
    if options.exif_transpose and im.getexif().get(0x0112) in QUARTER_TURNS:
        return h, w
    return w, h


def decode_rgb(data: bytes, options: DecodeOptions = DecodeOptions(), *, keep_source: bool = False) -> DecodedImage:
    """Decode to RGB u8: first frame only, EXIF transpose and alpha as ``options`` say.

    ``alpha="composite"`` blends onto opaque white exactly as transformers'
    ``convert_to_rgb`` does for PIL images (also for palette transparency);
    ``"drop"`` is Pillow's ``convert("RGB")``.

    ``keep_source``: return a :class:`SourcedImage` that also lends the Pillow image the
    array was exported from, for a family that resizes with Pillow (see :func:`take_source`).
    """
    im = open_image(check_bytes(data), max_pixels=options.max_pixels, formats=options.formats)
    return pil_to_rgb(im, options, keep_source=keep_source)


def pil_to_rgb(im: Image.Image, options: DecodeOptions, *, keep_source: bool = False) -> DecodedImage:
    """:func:`decode_rgb` after opening: a Pillow image (lazy or loaded) to RGB u8."""
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
        rgb = rgb_array(im)
    except MediaError:
        raise
    except Exception as e:
        raise MediaError(f"image decode: {_describe(e)}") from None
    if keep_source:
        return SourcedImage(rgb=rgb, source=[im])
    return DecodedImage(rgb=rgb)


@attrs.frozen(eq=False)
class SourcedImage(DecodedImage):
    """A :class:`DecodedImage` that also holds the Pillow ``RGB`` image its ``rgb`` was
    exported from (the same pixels), for one consumer to take with :func:`take_source`.

    A Pillow resize of the decoded image then starts from Pillow's own copy instead of
    rebuilding one from the array (a zero fill plus an unpack pass over the image). The
    image is handed out at most once and dropped by whoever takes it, so it does not
    stay alive next to the request's outputs; ``rgb`` remains the contract.
    """

    _source: list[Image.Image] = attrs.field(factory=list, repr=False, alias="source")


def take_source(media: DecodedImage) -> Image.Image | None:
    """The Pillow image ``media.rgb`` was exported from, on the first call only; else None.

    Thread-safe: ``list.pop`` is atomic, so concurrent callers cannot both get it.
    """
    holder = media._source if isinstance(media, SourcedImage) else None
    if not holder:
        return None
    try:
        return holder.pop()
    except IndexError:
        return None


def _describe(e: BaseException) -> str:
    # Pillow names the in-memory file by its repr; an address would make error messages
    # differ between identical requests.
    text = _OBJECT_REPR.sub("", str(e)).strip() or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "..."
