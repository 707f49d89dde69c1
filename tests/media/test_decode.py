"""The default Pillow decoder: formats, modes, alpha, EXIF, depth and size limits."""

from __future__ import annotations

import io
import struct
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.media.decode import declared_size, decode_rgb, image_size


def encode(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


RGB = Image.fromarray(np.arange(6 * 4 * 3, dtype=np.uint8).reshape(4, 6, 3) * 3, "RGB")


@pytest.mark.parametrize("fmt, kw", [("PNG", {}), ("BMP", {}), ("WEBP", {"lossless": True}), ("GIF", {}), ("JPEG", {})])
def test_formats_decode_to_hwc_rgb(fmt, kw):
    out = decode_rgb(encode(RGB, fmt, **kw))
    assert out.rgb.shape == (4, 6, 3) and out.rgb.dtype == np.uint8 and out.rgb.nbytes == 72
    assert (out.height, out.width) == (4, 6)
    if fmt in ("PNG", "BMP", "WEBP"):
        assert np.array_equal(out.rgb, np.asarray(RGB))


def test_gif_first_frame_only():
    frames = [Image.new("RGB", (5, 5), c) for c in [(255, 0, 0), (0, 255, 0), (0, 0, 255)]]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    assert decode_rgb(buf.getvalue()).rgb[0, 0].tolist() == [255, 0, 0]


def test_grey_bilevel_palette_cmyk():
    assert decode_rgb(encode(Image.new("L", (3, 2), 77), "PNG")).rgb[1, 2].tolist() == [77, 77, 77]
    assert decode_rgb(encode(Image.new("1", (3, 2), 1), "PNG")).rgb[0, 0].tolist() == [255, 255, 255]
    pal = Image.new("P", (3, 2), 0)
    pal.putpalette([10, 20, 30] + [0] * 765)
    assert decode_rgb(encode(pal, "PNG")).rgb[0, 0].tolist() == [10, 20, 30]
    cmyk = encode(Image.new("CMYK", (8, 8), (0, 255, 0, 0)), "JPEG", quality=100)
    assert decode_rgb(cmyk).rgb.shape == (8, 8, 3)


def test_palette_transparency_and_la_composite_onto_white():
    pal = Image.new("P", (2, 2), 1)
    pal.putpalette([0, 0, 0, 200, 10, 10] + [0] * 762)
    data = encode(pal, "PNG", transparency=1)
    assert decode_rgb(data, mmp.DecodeOptions(alpha="composite")).rgb[0, 0].tolist() == [255, 255, 255]
    assert decode_rgb(data, mmp.DecodeOptions(alpha="drop")).rgb[0, 0].tolist() == [200, 10, 10]
    la = encode(Image.merge("LA", [Image.new("L", (2, 2), 0), Image.new("L", (2, 2), 128)]), "PNG")
    # round(a/255*c + (1 - a/255)*255) with c=0, a=128 -> 127
    assert decode_rgb(la, mmp.DecodeOptions(alpha="composite")).rgb[0, 0].tolist() == [127, 127, 127]
    assert decode_rgb(la, mmp.DecodeOptions(alpha="drop")).rgb[0, 0].tolist() == [0, 0, 0]


def test_composite_rgba_is_qwen_vl_utils_to_rgb():
    """qwen-vl-utils' to_rgb: RGBA pasted onto white through its alpha, every other mode's alpha
    dropped (tests/chat/test_chat_qwen_vl_utils.py compares with qwen-vl-utils itself)."""
    rgba = Image.new("RGBA", (2, 2), (0, 0, 0, 128))
    white = Image.new("RGB", (2, 2), (255, 255, 255))
    white.paste(rgba, mask=rgba.getchannel("A"))
    got = decode_rgb(encode(rgba, "PNG"), mmp.DecodeOptions(alpha="composite_rgba")).rgb
    assert got.tobytes() == white.tobytes() and got[0, 0].tolist() == [127, 127, 127]
    pal = Image.new("P", (2, 2), 1)
    pal.putpalette([0, 0, 0, 200, 10, 10] + [0] * 762)
    trns = encode(pal, "PNG", transparency=1)
    assert decode_rgb(trns, mmp.DecodeOptions(alpha="composite_rgba")).rgb[0, 0].tolist() == [200, 10, 10]
    la = encode(Image.merge("LA", [Image.new("L", (2, 2), 0), Image.new("L", (2, 2), 128)]), "PNG")
    assert decode_rgb(la, mmp.DecodeOptions(alpha="composite_rgba")).rgb[0, 0].tolist() == [0, 0, 0]


def test_exif_transpose_is_an_option():
    im = Image.new("RGB", (6, 4), (1, 2, 3))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 CW on display
    data = encode(im, "JPEG", exif=exif.tobytes())
    assert decode_rgb(data).rgb.shape == (4, 6, 3)
    assert decode_rgb(data, mmp.DecodeOptions(exif_transpose=True)).rgb.shape == (6, 4, 3)


@pytest.mark.parametrize("mode, value", [("I;16", 300), ("I", 70000), ("F", 0.5)])
def test_deep_modes_rejected(mode, value):
    fmt = "PNG" if mode == "I;16" else "TIFF"
    data = encode(Image.new(mode, (2, 2), value), fmt)
    with pytest.raises(mmf.MediaError, match="unsupported color mode"):
        decode_rgb(data, mmp.DecodeOptions(formats=("PNG", "TIFF")))


@pytest.mark.parametrize("fmt, name", [("TIFF", "TIFF"), ("ICO", "ICO"), ("PDF", "PDF")])
def test_formats_outside_the_allowlist_are_refused_by_name(fmt, name):
    data = encode(RGB, fmt)
    accepted = "accepted: JPEG, PNG, WEBP, GIF, BMP"
    with pytest.raises(mmf.MediaError, match=f"image decode: unsupported format {name} \\({accepted}\\)"):
        decode_rgb(data)


def test_an_allowed_format_opens_once_listed():
    assert decode_rgb(encode(RGB, "TIFF"), mmp.DecodeOptions(formats=("TIFF",))).rgb.shape == (4, 6, 3)


def test_unknown_bytes_keep_pillows_message():
    with pytest.raises(mmf.MediaError, match="image decode: cannot identify image file"):
        decode_rgb(b"GIF87a-but-not-really" + bytes(10))


@pytest.mark.parametrize("data", [b"", b"hello world", b"<html></html>", b"\x89PNG\r\n\x1a\n" + b"\0" * 20])
def test_garbage_rejected(data):
    with pytest.raises(mmf.MediaError, match="image decode"):
        decode_rgb(data)


def test_truncated_image_rejected():
    data = encode(Image.effect_noise((64, 64), 50).convert("RGB"), "PNG")
    with pytest.raises(mmf.MediaError, match="image decode"):
        decode_rgb(data[: len(data) // 2])


def test_header_size_and_limit():
    data = encode(RGB, "PNG")
    assert image_size(data) == (6, 4)
    with pytest.raises(mmf.LimitExceededError, match="6x4 = 24 pixels, above the limit of 23"):
        decode_rgb(data, mmp.DecodeOptions(max_pixels=23))


# --- the size from the header, read before Pillow; videos sent as images -----------------


def png_claiming(w: int, h: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


NOISE = Image.effect_noise((37, 23), 40).convert("RGB")


@pytest.mark.parametrize("fmt, kw", [
    ("PNG", {}), ("GIF", {}), ("BMP", {}), ("WEBP", {"lossless": True}), ("WEBP", {"quality": 50}),
    ("WEBP", {"exif": b"Exif\0\0II*\0\x08\0\0\0\0\0"}), ("JPEG", {}), ("JPEG", {"progressive": True}),
    ("JPEG", {"icc_profile": b"\0" * 70000, "exif": b"Exif\0\0" + b"\xff\xc0" * 100}),
])
def test_declared_size_is_the_size_pillow_reads(fmt, kw):
    data = encode(NOISE, fmt, **kw)
    assert declared_size(data) == Image.open(io.BytesIO(data)).size == (37, 23)


def test_declared_size_of_a_top_down_bmp_and_of_no_header():
    bmp = bytearray(encode(NOISE, "BMP"))
    struct.pack_into("<i", bmp, 22, -23)  # rows stored top-down
    assert declared_size(bytes(bmp)) == Image.open(io.BytesIO(bytes(bmp))).size == (37, 23)
    for data in (b"", b"\xff\xd8\xff" + b"\0" * (1 << 20), encode(NOISE, "PNG")[:20], b"BM", encode(NOISE, "TIFF")):
        assert declared_size(data) is None
    assert declared_size(encode(NOISE, "PNG"), formats=("JPEG",)) is None


def test_a_bomb_is_refused_before_pillow_with_both_sides():
    with warnings.catch_warnings():
        # 10000x10000 is past Pillow's warning threshold: the limit refuses it before Pillow opens it.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with pytest.raises(mmf.LimitExceededError) as e:
            decode_rgb(png_claiming(10_000, 10_000), mmp.DecodeOptions(max_pixels=10**6))
    assert str(e.value) == ("image is 10000x10000 = 100000000 pixels, above the limit of 1000000 pixels "
                            "(Limits.max_image_pixels)")


def test_pillows_own_refusal_under_a_higher_limit_says_whose_limit():
    with pytest.raises(mmf.LimitExceededError) as e:
        decode_rgb(png_claiming(100_000, 100_000), mmp.DecodeOptions(max_pixels=10**11))
    assert str(e.value) == ("image is 100000x100000 = 10000000000 pixels, above the limit of 178956970 pixels "
                            "Pillow opens (twice PIL.Image.MAX_IMAGE_PIXELS)")


def container(kind: bytes) -> bytes:
    return {
        b"isom": b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41" + b"\0" * 64,
        b"qt  ": b"\0\0\0\x14ftypqt  \0\0\x02\0qt  " + b"\0" * 64,
        b"3gp4": b"\0\0\0\x14ftyp3gp4\0\0\x02\x003gp4" + b"\0" * 64,
        b"webm": b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm" + b"\0" * 64,
        b"avi": b"RIFF\0\x10\0\0AVI LIST" + b"\0" * 64,
        b"ts": (b"\x47\x40\x00\x10" + b"\xff" * 184) * 3,
    }[kind]


@pytest.mark.parametrize("kind, name", [
    (b"isom", "MP4"), (b"qt  ", "QuickTime"), (b"3gp4", "3GP"), (b"webm", "WebM/Matroska"), (b"avi", "AVI"),
    (b"ts", "MPEG-TS"),
])
def test_a_video_sent_as_an_image_is_named_so(kind, name):
    with pytest.raises(mmf.MediaError) as e:
        decode_rgb(container(kind))
    assert str(e.value) == f"image decode: not an image but a video ({name}): pass it in videos="


def test_audio_and_image_containers_are_not_called_videos():
    m4a = b"\0\0\0\x18ftypM4A \0\0\x02\0M4A isom" + b"\0" * 64
    with pytest.raises(mmf.MediaError, match="image decode: cannot identify image file"):
        decode_rgb(m4a)
    heic = b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + b"\0" * 64
    with pytest.raises(mmf.MediaError, match="unsupported format HEIC"):
        decode_rgb(heic)
