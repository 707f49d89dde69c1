"""Default decoder: Pillow to RGB uint8 HWC, with limits checked from the header.

Decoding with Pillow (not another codec) is what makes JPEG bit-exact with the Python
reference, whose processors receive Pillow-decoded images.
"""

from __future__ import annotations

import io
import re
import struct

import attrs
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

# Video containers, by magic bytes: a clip sent as an image is told to go in videos=
# (the CLI says --video instead: it swaps VIDEO_HINT).
VIDEO_HINT = "pass it in videos="
_VIDEO_MAGIC = (
    (b"\x1a\x45\xdf\xa3", "WebM/Matroska"), (b"FLV\x01", "FLV"), (b"\x00\x00\x01\xba", "MPEG-PS"),
    (b"\x00\x00\x01\xb3", "MPEG"), (b"\x30\x26\xb2\x75\x8e\x66\xcf\x11", "ASF/WMV"),
)
_AUDIO_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P ", b"F4A ", b"F4B "})
_TS_PACKET = 188


def sniff_format(data: bytes) -> str | None:
    """The name of a known image format ``data`` starts like, among those not decoded here."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data[4:8] == b"ftyp":
        return _FTYP.get(data[8:12])
    return None


def sniff_video(data: bytes) -> str | None:
    """The name of the video container ``data`` starts like, if any."""
    for magic, name in _VIDEO_MAGIC:
        if data.startswith(magic):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"AVI ":
        return "AVI"
    if data[4:8] == b"ftyp" and data[8:12] not in _FTYP and data[8:12] not in _AUDIO_BRANDS:
        brand = data[8:12]
        return "QuickTime" if brand == b"qt  " else "3GP" if brand.startswith(b"3g") else "MP4"
    if data[:1] == data[_TS_PACKET : _TS_PACKET + 1] == data[2 * _TS_PACKET : 2 * _TS_PACKET + 1] == b"\x47":
        return "MPEG-TS"
    return None


def declared_size(data: bytes, formats: tuple[str, ...] | None = None) -> tuple[int, int] | None:
    """``(width, height)`` as the header of a PNG, GIF, WebP, BMP or JPEG among ``formats``
    (None: any) declares it, read as Pillow reads it but without Pillow; None for anything
    else or a header cut short. Lets the pixel limit refuse a bomb before Pillow's own
    guard does."""
    for name, reader in _HEADER_READERS:
        if formats is None or name in formats:
            try:
                size = reader(data)
            except struct.error:  # cut short: Pillow tells what is wrong
                return None
            if size is not None:
                return size
    return None


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
        return struct.unpack_from(">II", data, 16)
    return None


def _gif_size(data: bytes) -> tuple[int, int] | None:
    return struct.unpack_from("<HH", data, 6) if data[:6] in (b"GIF87a", b"GIF89a") else None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack_from("<HH", data, 26)
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8X" and len(data) >= 30:
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    if chunk == b"VP8L" and data[20:21] == b"\x2f":
        bits = struct.unpack_from("<I", data, 21)[0]
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _bmp_size(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"BM":
        return None
    header = struct.unpack_from("<I", data, 14)[0]
    if header == 12:
        return struct.unpack_from("<HH", data, 18)
    if header in (40, 52, 56, 64, 108, 124):
        w, h = struct.unpack_from("<II", data, 18)
        return w, 2**32 - h if data[25] == 0xFF else h  # a top-down bitmap stores -height
    return None


# JPEG markers without a length field (Pillow's table); every other one is followed by
# its segment's length. The last frame header (SOFn, DHP) before the scan gives the size.
_JPEG_BARE = frozenset({0xC8, *range(0xD0, 0xDA), *range(0xF0, 0xFE)})
_JPEG_SOF = frozenset({*range(0xC0, 0xD0), 0xDE}) - {0xC4, 0xC8, 0xCC}
_JPEG_MARKER = re.compile(rb"\xff[^\x00\xff]")  # junk, stuffing and fill bytes between are skipped, as by Pillow
_JPEG_MAX_MARKERS = 1024  # real headers have a few dozen; past this Pillow alone decides


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    if data[:3] != b"\xff\xd8\xff":
        return None
    size, at = None, 2
    for _ in range(_JPEG_MAX_MARKERS):
        found = _JPEG_MARKER.search(data, at)
        if found is None:
            return None
        at, marker = found.start(), data[found.start() + 1]
        if marker == 0xDA:
            return size
        if marker in _JPEG_BARE:
            at += 2
            continue
        if marker in _JPEG_SOF:
            h, w = struct.unpack_from(">HH", data, at + 5)
            size = w, h
        length = struct.unpack_from(">H", data, at + 2)[0]
        if length < 2:
            return None
        at += 2 + length
    return None


_HEADER_READERS = (
    ("PNG", _png_size), ("GIF", _gif_size), ("WEBP", _webp_size), ("BMP", _bmp_size), ("JPEG", _jpeg_size),
)


def check_image_pixels(width: int, height: int, max_pixels: int | None) -> None:
    """Refuse an image of more than ``max_pixels`` (the pipeline's ``Limits.max_image_pixels``)."""
    if max_pixels is not None and width * height > max_pixels:
        raise LimitExceededError(
            f"image is {width}x{height} = {width * height} pixels, above the limit of {max_pixels} pixels "
            f"(Limits.max_image_pixels)"
        )


def open_image(data: bytes, *, max_pixels: int | None, formats: tuple[str, ...] | None = None) -> Image.Image:
    """Open ``data`` and check its declared size; no pixels are decoded yet."""
    declared = declared_size(data, formats)
    if declared is not None:
        check_image_pixels(*declared, max_pixels)
    try:
        im = Image.open(io.BytesIO(data), formats=formats)
    except Image.DecompressionBombError:
        # Pillow's own guard fired on a size the header reader missed, or under a
        # max_pixels above Pillow's.
        raise _pillow_refusal(declared) from None
    except Exception as e:  # Pillow signals bad data with many exception types
        raise _unopened(data, formats, e) from None
    w, h = im.size
    if w <= 0 or h <= 0:
        raise MediaError(f"image decode: empty image ({w}x{h})")
    check_image_pixels(w, h, max_pixels)
    return im


def _pillow_refusal(declared: tuple[int, int] | None) -> LimitExceededError:
    size = "" if declared is None else f" {declared[0]}x{declared[1]} = {declared[0] * declared[1]} pixels,"
    limit = 2 * (Image.MAX_IMAGE_PIXELS or 0)  # set: Pillow refuses nothing without it
    return LimitExceededError(
        f"image is{size} above the limit of {limit} pixels Pillow opens (twice PIL.Image.MAX_IMAGE_PIXELS)"
    )


def _unopened(data: bytes, formats: tuple[str, ...] | None, e: Exception) -> MediaError:
    """Why Pillow could not open ``data``: a known format it may not decode here, a video, or its own words."""
    known = sniff_format(data)
    if known is not None:
        return MediaError(f"image decode: unsupported format {known} (accepted: {', '.join(formats or ())})")
    video = sniff_video(data)
    if video is not None:
        return MediaError(f"image decode: not an image but a video ({video}): {VIDEO_HINT}")
    return MediaError(f"image decode: {_describe(e)}")


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
    ``"drop"`` is Pillow's ``convert("RGB")``; ``"composite_rgba"`` is qwen-vl-utils' ``to_rgb``:
    an ``RGBA`` image pasted onto white through its alpha, every other mode ``convert("RGB")``
    (so the alpha of ``LA``, ``PA`` and palette transparency is dropped).

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
        elif options.alpha == "composite_rgba" and im.mode == "RGBA":
            white = Image.new("RGB", im.size, (255, 255, 255))
            white.paste(im, mask=im.getchannel("A"))
            im = white
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
