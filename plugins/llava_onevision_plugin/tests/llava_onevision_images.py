"""The deterministic images behind the llava_onevision goldens (numpy + Pillow only).

Every image is rebuilt from its name alone: a numpy generator seeded with the CRC-32 of
the name draws the pixels, Pillow encodes them (a 16-bit grey PNG is written by hand,
since Pillow has no such encoder). The goldens record each file's blake3, so an encoder
that drifts is caught before any pixel is compared. Nothing here imports mm_framework:
the golden generator runs it inside the reference environment.

The set is chosen for what the anyres path treats specially: sizes that land on each
kind of grid pinpoint (1x1 crop up to 6x6, exact pinpoint sizes that skip the resize),
thin strips whose unpadded feature count hinges on ``round(.., 7)``, images large enough
for the ``anyres_max_9`` cap, every Pillow mode that converts to RGB its own way (1, L,
LA, P, P+tRNS, RGBA, CMYK, 16-bit grey), EXIF orientation, GIF, lossy and lossless WebP.
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


def _save(im: Image.Image, fmt: str, **params) -> bytes:
    out = io.BytesIO()
    im.save(out, fmt, **params)
    return out.getvalue()


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: low-frequency colour waves, a few sharp rectangles, grain."""
    yy = np.linspace(0.0, 1.0, h, dtype=np.float64)[:, None]
    xx = np.linspace(0.0, 1.0, w, dtype=np.float64)[None, :]
    phase = rng.uniform(0, 2 * np.pi, 3)
    freq = rng.uniform(1.5, 6.0, (3, 2))
    planes = [128 + 90 * np.sin(2 * np.pi * (freq[c, 0] * yy + freq[c, 1] * xx) + phase[c]) for c in range(3)]
    img = np.stack(planes, axis=-1)
    for _ in range(5):
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        y1, x1 = y0 + 1 + int(rng.integers(0, max(1, h // 4))), x0 + 1 + int(rng.integers(0, max(1, w // 4)))
        img[y0:y1, x0:x1] = rng.integers(0, 256, 3)
    img += rng.normal(0.0, 9.0, (h, w, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """UI-like RGB: flat panels, a menu bar, text-sized dark marks, hard colour blocks."""
    img = np.full((h, w, 3), 246, dtype=np.uint8)
    img[:40] = (32, 36, 44)
    img[40:, : w // 6] = (228, 232, 238)
    for y in range(64, h - 24, 20):
        x = w // 6 + 16
        while x < w - 32:
            run = int(rng.integers(3, 48))
            img[y : y + 11, x : x + run] = (24, 24, 24) if run < 40 else rng.integers(0, 256, 3)
            x += run + int(rng.integers(4, 10))
    for _ in range(6):
        y0, x0 = int(rng.integers(50, h - 60)), int(rng.integers(0, w - 140))
        img[y0 : y0 + 30, x0 : x0 + 130] = rng.integers(0, 256, 3)
    return img


def _alpha(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """A left-to-right ramp with a fully transparent hole, an opaque corner and a noisy band."""
    a = np.tile(np.linspace(0, 255, w).astype(np.uint8), (h, 1))
    a[h // 4 : h // 2, w // 4 : w // 2] = 0
    a[h // 2 :, w // 2 :] = 255
    a[: max(1, h // 10)] = rng.integers(0, 256, (max(1, h // 10), w), dtype=np.uint8)
    return a


def _rgb(w: int, h: int, fmt: str, maker=photo, **params) -> Maker:
    return lambda rng: _save(Image.fromarray(maker(w, h, rng), "RGB"), fmt, **params)


def _grey(rng):
    return _save(Image.fromarray(photo(800, 600, rng), "RGB").convert("L"), "PNG")


def _bilevel(rng):
    return _save(Image.fromarray(photo(300, 200, rng), "RGB").convert("L").convert("1"), "PNG")


def _palette(rng):
    return _save(Image.fromarray(photo(500, 375, rng), "RGB").quantize(48), "PNG")


def _palette_trns(rng):
    return _save(Image.fromarray(photo(320, 240, rng), "RGB").quantize(24), "PNG", transparency=2)


def _rgba(rng):
    return _save(Image.fromarray(np.dstack([photo(640, 480, rng), _alpha(640, 480, rng)]), "RGBA"), "PNG")


def _grey_alpha(rng):
    grey = Image.fromarray(photo(320, 240, rng), "RGB").convert("L")
    return _save(Image.merge("LA", (grey, Image.fromarray(_alpha(320, 240, rng), "L"))), "PNG")


def _webp_alpha(rng):
    rgba = np.dstack([photo(400, 300, rng), _alpha(400, 300, rng)])
    return _save(Image.fromarray(rgba, "RGBA"), "WEBP", lossless=True)


def _cmyk(rng):
    return _save(Image.fromarray(photo(640, 480, rng), "RGB").convert("CMYK"), "JPEG", quality=90)


def _exif_rotated(rng):
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: the viewer rotates 90 degrees clockwise
    return _save(Image.fromarray(photo(640, 480, rng), "RGB"), "JPEG", quality=90, exif=exif.tobytes())


def _grey16(rng):
    """A 16-bit grey PNG (IHDR bit depth 16, colour type 0), full range."""
    h, w = 240, 320
    v = (np.linspace(0, 65535, w)[None, :] + rng.integers(0, 512, (h, w))).clip(0, 65535).astype(">u2")
    raw = b"".join(b"\x00" + row.tobytes() for row in v)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    head = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 0, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + head + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _gif(rng):
    frames = [Image.fromarray(photo(320, 240, rng), "RGB").quantize(200) for _ in range(2)]
    return _save(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=80, loop=0)


# name -> maker, in golden order.
IMAGES: dict[str, Maker] = {
    "tiny_1x1.png": _rgb(1, 1, "PNG"),
    "tiny_10x10.png": _rgb(10, 10, "PNG"),
    "odd_333x501.png": _rgb(333, 501, "PNG"),
    "exact_384x384.png": _rgb(384, 384, "PNG"),
    "exact_1152x768.png": _rgb(1152, 768, "PNG"),
    "photo_640x480.jpg": _rgb(640, 480, "JPEG", quality=90),
    "photo_1280x960.jpg": _rgb(1280, 960, "JPEG", quality=90),
    "photo_1024x899.jpg": _rgb(1024, 899, "JPEG", quality=92),
    "huge_4000x3000.jpg": _rgb(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": _rgb(1920, 1080, "PNG", maker=screenshot),
    "screenshot_2560x1440.png": _rgb(2560, 1440, "PNG", maker=screenshot),
    "thin_20x3000.png": _rgb(20, 3000, "PNG"),
    "thin_3000x20.png": _rgb(3000, 20, "PNG"),
    "thin_1x2304.png": _rgb(1, 2304, "PNG"),
    "thin_4000x7.png": _rgb(4000, 7, "PNG"),
    "grey_L_800x600.png": _grey,
    "bilevel_1_300x200.png": _bilevel,
    "palette_P_500x375.png": _palette,
    "palette_P_trns_320x240.png": _palette_trns,
    "alpha_RGBA_640x480.png": _rgba,
    "alpha_LA_320x240.png": _grey_alpha,
    "alpha_lossless_400x300.webp": _webp_alpha,
    "cmyk_640x480.jpg": _cmyk,
    "exif_rot6_640x480.jpg": _exif_rotated,
    "grey16_320x240.png": _grey16,
    "anim_320x240.gif": _gif,
    "lossy_640x480.webp": _rgb(640, 480, "WEBP", quality=80),
}


@functools.lru_cache(maxsize=None)
def make(name: str) -> bytes:
    """The encoded bytes of image ``name`` (identical on every call and every run)."""
    try:
        maker = IMAGES[name]
    except KeyError:
        raise KeyError(f"no llava_onevision golden image named {name!r}") from None
    return maker(np.random.default_rng(zlib.crc32(name.encode())))
