"""The deterministic image set behind the qwen_vl goldens (test support; numpy + Pillow only).

Each image is rebuilt from its name: the pixels come from a numpy generator seeded by the
name, the bytes from Pillow's encoders (or, for the 48-bit PNG that Pillow cannot write,
from ``zlib``). The goldens record the SHA-256 of every file, so a changed encoder is
caught before any pixel is compared. Nothing here imports mm_framework: the golden
generator runs it inside the reference environment.

The set spans the cases transformers treats specially: sizes from 10x10 to 4000x3000,
thin images on both sides of the 200:1 aspect limit, every Pillow mode that converts
to RGB differently (1, L, LA, P, P+tRNS, RGBA, CMYK, 16-bit), EXIF orientation, GIF,
lossy and lossless WebP, a screenshot and photo-like JPEGs.
"""

from __future__ import annotations

import functools
import io
import struct
import zlib
from collections.abc import Callable

import numpy as np
from PIL import Image

Maker = Callable[[np.random.Generator], bytes]


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _encode(im: Image.Image, fmt: str, **params) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: a smooth colour field, a few hard-edged shapes and sensor noise."""
    coarse = rng.integers(0, 256, (max(2, h // 48), max(2, w // 48), 3), dtype=np.uint8)
    base = np.asarray(Image.fromarray(coarse, "RGB").resize((w, h), Image.Resampling.BILINEAR)).astype(np.int16)
    for _ in range(6):
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        y1, x1 = y0 + int(rng.integers(1, max(2, h // 3))), x0 + int(rng.integers(1, max(2, w // 3)))
        base[y0:y1, x0:x1] = rng.integers(0, 256, 3, dtype=np.int16)
    base += rng.integers(-12, 13, (h, w, 3), dtype=np.int16)
    return np.clip(base, 0, 255).astype(np.uint8)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Screenshot-like RGB: flat panels, a title bar, and rows of glyph-sized marks."""
    img = np.full((h, w, 3), 250, dtype=np.uint8)
    img[:48] = (40, 44, 52)
    img[48:, : w // 5] = (235, 238, 242)
    img[h - 28 :] = (0, 122, 204)
    for y in range(72, h - 40, 22):
        x = w // 5 + 24
        while x < w - 40:
            gw = int(rng.integers(4, 40))
            img[y : y + 12, x : x + gw] = rng.choice([20, 60, 200], 3).astype(np.uint8) if gw > 36 else 30
            x += gw + int(rng.integers(3, 9))
    for _ in range(8):
        y0, x0 = int(rng.integers(60, h - 80)), int(rng.integers(0, w - 160))
        img[y0 : y0 + 28, x0 : x0 + 120] = rng.integers(0, 256, 3, dtype=np.uint8)
    ramp = np.linspace(0, 255, w // 4, dtype=np.float32).astype(np.uint8)
    img[56:64, w - w // 4 :] = ramp[None, :, None]
    return img


def _png16(rgb16: np.ndarray) -> bytes:
    """A 16-bit-per-channel RGB PNG (Pillow can read these but not write them)."""
    h, w, _ = rgb16.shape
    raw = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in rgb16)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _rgb(w: int, h: int, fmt: str, maker=photo, **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(maker(w, h, rng), "RGB"), fmt, **params)


def _gray(rng: np.random.Generator) -> bytes:
    return _encode(Image.fromarray(photo(800, 600, rng), "RGB").convert("L"), "PNG")


def _bilevel(rng: np.random.Generator) -> bytes:
    return _encode(Image.fromarray(photo(200, 100, rng), "RGB").convert("L").convert("1"), "PNG")


def _palette(rng: np.random.Generator) -> bytes:
    return _encode(Image.fromarray(photo(500, 375, rng), "RGB").quantize(64), "PNG")


def _palette_trns(rng: np.random.Generator) -> bytes:
    return _encode(Image.fromarray(photo(320, 240, rng), "RGB").quantize(32), "PNG", transparency=3)


def _alpha(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Alpha ramp with a fully transparent hole and an opaque block."""
    a = np.tile(np.linspace(0, 255, w, dtype=np.float32).astype(np.uint8), (h, 1))
    a[h // 4 : h // 2, w // 4 : w // 2] = 0
    a[h // 2 :, w // 2 :] = 255
    a[: h // 8] = rng.integers(0, 256, (h // 8, w), dtype=np.uint8)
    return a


def _rgba(rng: np.random.Generator) -> bytes:
    rgba = np.dstack([photo(640, 480, rng), _alpha(640, 480, rng)])
    return _encode(Image.fromarray(rgba, "RGBA"), "PNG")


def _la(rng: np.random.Generator) -> bytes:
    grey = Image.fromarray(photo(320, 240, rng), "RGB").convert("L")
    return _encode(Image.merge("LA", (grey, Image.fromarray(_alpha(320, 240, rng), "L"))), "PNG")


def _webp_alpha(rng: np.random.Generator) -> bytes:
    rgba = np.dstack([photo(320, 240, rng), _alpha(320, 240, rng)])
    return _encode(Image.fromarray(rgba, "RGBA"), "WEBP", lossless=True)


def _cmyk(rng: np.random.Generator) -> bytes:
    return _encode(Image.fromarray(photo(640, 480, rng), "RGB").convert("CMYK"), "JPEG", quality=90)


def _exif_rot6(rng: np.random.Generator) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 CW to display
    return _encode(Image.fromarray(photo(640, 480, rng), "RGB"), "JPEG", quality=90, exif=exif.tobytes())


def _png16_gray(rng: np.random.Generator) -> bytes:
    ramp = np.linspace(0, 65535, 640, dtype=np.float64)[None, :] * np.ones((480, 1))
    v = (ramp + rng.integers(0, 256, (480, 640))).clip(0, 65535).astype("<u2")
    return _encode(Image.frombytes("I;16", (640, 480), v.tobytes()), "PNG")


def _png16_rgb(rng: np.random.Generator) -> bytes:
    hi = photo(640, 480, rng).astype(np.uint16)
    return _png16(hi * 257 + rng.integers(0, 256, hi.shape, dtype=np.uint16) % 257)


def _gif(rng: np.random.Generator) -> bytes:
    frames = [Image.fromarray(photo(320, 240, rng), "RGB").quantize(255) for _ in range(2)]
    return _encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0, transparency=0)


# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": _rgb(10, 10, "PNG"),
    "halfround_98x70.png": _rgb(98, 70, "PNG"),
    "rgb_333x501.png": _rgb(333, 501, "PNG"),
    "exact_448x448.png": _rgb(448, 448, "PNG"),
    "rgb_640x480.jpg": _rgb(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": _rgb(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": _rgb(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": _rgb(1920, 1080, "PNG", maker=screenshot),
    "tall_20x3000.png": _rgb(20, 3000, "PNG"),
    "wide_3000x20.png": _rgb(3000, 20, "PNG"),
    "ratio200_10x2000.png": _rgb(10, 2000, "PNG"),
    "toowide_3000x10.png": _rgb(3000, 10, "PNG"),
    "gray_L_800x600.png": _gray,
    "bilevel_1_200x100.png": _bilevel,
    "palette_P_500x375.png": _palette,
    "palette_P_trns_320x240.png": _palette_trns,
    "rgba_640x480.png": _rgba,
    "gray_alpha_LA_320x240.png": _la,
    "cmyk_640x480.jpg": _cmyk,
    "exif_rot6_640x480.jpg": _exif_rot6,
    "png16_gray_640x480.png": _png16_gray,
    "png16_rgb_640x480.png": _png16_rgb,
    "anim_320x240.gif": _gif,
    "lossy_640x480.webp": _rgb(640, 480, "WEBP", quality=80),
    "rgba_lossless_320x240.webp": _webp_alpha,
}


@functools.lru_cache(maxsize=None)
def make(name: str) -> bytes:
    """The encoded bytes of image ``name`` (cached; identical on every call and run)."""
    try:
        maker = IMAGES[name]
    except KeyError:
        raise KeyError(f"no golden image named {name!r}") from None
    return maker(_rng(name))
