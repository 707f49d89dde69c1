"""The deterministic image set behind the pixtral goldens (numpy + Pillow only).

Each image is rebuilt from its name: pixels from a numpy generator seeded by the CRC of
the name, bytes from Pillow's encoders. The goldens record the blake3 of every file, so
an encoder that drifts is caught before any pixel is compared. The generator imports
this module inside the reference environment, so nothing here imports mm_framework.

The set covers what Pixtral sizing treats differently (upscaled tiny images, exact patch
multiples, downscaled photos and a 12-megapixel JPEG, thin strips on both sides of the
degenerate floor) and every Pillow mode whose RGB conversion differs (1, L, P, P with
transparency, RGBA, LA, CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

import functools
import io
import zlib
from collections.abc import Callable

import numpy as np
from PIL import Image

Maker = Callable[[np.random.Generator], bytes]


def _encode(im: Image.Image, fmt: str, **params) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: bilinear-smoothed colour cells, hard-edged rectangles, grain."""
    cells = rng.integers(0, 256, (max(2, h // 40), max(2, w // 40), 3), dtype=np.uint8)
    img = np.asarray(Image.fromarray(cells).resize((w, h), Image.Resampling.BILINEAR)).astype(np.int16)
    for _ in range(5):
        y, x = int(rng.integers(0, h)), int(rng.integers(0, w))
        img[y : y + int(rng.integers(1, h // 3 + 2)), x : x + int(rng.integers(1, w // 3 + 2))] = rng.integers(0, 256, 3)
    img += rng.integers(-10, 11, img.shape, dtype=np.int16)
    return np.clip(img, 0, 255).astype(np.uint8)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Screenshot-like RGB: flat panels, a menu bar and lines of glyph-sized blocks."""
    img = np.full((h, w, 3), 246, dtype=np.uint8)
    img[:40] = (32, 33, 36)
    img[40:, : w // 6] = (228, 231, 236)
    for y in range(64, h - 24, 20):
        x = w // 6 + 20
        while x < w - 30:
            run = int(rng.integers(3, 30))
            img[y : y + 11, x : x + run] = 24 if run < 26 else rng.integers(0, 256, 3)
            x += run + int(rng.integers(2, 8))
    return img


def _rgb(w: int, h: int, fmt: str, maker=photo, **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(maker(w, h, rng)), fmt, **params)


def _converted(w: int, h: int, mode: str, fmt: str = "PNG", **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(photo(w, h, rng)).convert(mode), fmt, **params)


def _alpha(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """A horizontal alpha ramp with a transparent hole, an opaque block and a noisy band."""
    a = np.tile(np.linspace(0, 255, w).astype(np.uint8), (h, 1))
    a[h // 4 : h // 2, w // 4 : w // 2] = 0
    a[h // 2 :, w // 2 :] = 255
    a[: h // 10] = rng.integers(0, 256, (h // 10, w), dtype=np.uint8)
    return a


def _rgba(w: int, h: int, fmt: str, **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(np.dstack([photo(w, h, rng), _alpha(w, h, rng)])), fmt, **params)


def _la(rng: np.random.Generator) -> bytes:
    grey = Image.fromarray(photo(320, 240, rng)).convert("L")
    return _encode(Image.merge("LA", (grey, Image.fromarray(_alpha(320, 240, rng)))), "PNG")


def _palette(colours: int, **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(photo(500, 375, rng)).quantize(colours), "PNG", **params)


def _exif_rot6(rng: np.random.Generator) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: the viewer rotates 90 degrees clockwise
    return _encode(Image.fromarray(photo(640, 480, rng)), "JPEG", quality=90, exif=exif.tobytes())


def _grey16(rng: np.random.Generator) -> bytes:
    ramp = np.linspace(0, 65535, 640)[None, :] + rng.integers(0, 512, (480, 640))
    return _encode(Image.frombytes("I;16", (640, 480), ramp.clip(0, 65535).astype("<u2").tobytes()), "PNG")


def _gif(rng: np.random.Generator) -> bytes:
    frames = [Image.fromarray(photo(320, 240, rng)).quantize(200) for _ in range(2)]
    return _encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=80, loop=0)


# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": _rgb(10, 10, "PNG"),
    "odd_70x50.png": _rgb(70, 50, "PNG"),
    "portrait_333x501.png": _rgb(333, 501, "PNG"),
    "exact_1024x768.png": _rgb(1024, 768, "PNG"),
    "photo_640x480.jpg": _rgb(640, 480, "JPEG", quality=90),
    "photo_1280x960.jpg": _rgb(1280, 960, "JPEG", quality=90),
    "huge_4000x3000.jpg": _rgb(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": _rgb(1920, 1080, "PNG", maker=screenshot),
    "tall_20x3000.png": _rgb(20, 3000, "PNG"),
    "wide_3000x20.png": _rgb(3000, 20, "PNG"),
    "sliver_3000x3.png": _rgb(3000, 3, "PNG"),
    "degenerate_2000x1.png": _rgb(2000, 1, "PNG"),
    "grey_L_800x600.png": _converted(800, 600, "L"),
    "bilevel_1_200x100.png": _converted(200, 100, "1"),
    "palette_P_500x375.png": _palette(64),
    "palette_trns_500x375.png": _palette(32, transparency=5),
    "rgba_640x480.png": _rgba(640, 480, "PNG"),
    "grey_alpha_LA_320x240.png": _la,
    "cmyk_640x480.jpg": _converted(640, 480, "CMYK", "JPEG", quality=90),
    "exif_rot6_640x480.jpg": _exif_rot6,
    "grey16_640x480.png": _grey16,
    "anim_320x240.gif": _gif,
    "lossy_640x480.webp": _rgb(640, 480, "WEBP", quality=80),
    "alpha_lossless_320x240.webp": _rgba(320, 240, "WEBP", lossless=True),
}


@functools.lru_cache(maxsize=None)
def make(name: str) -> bytes:
    """The encoded bytes of image ``name`` (cached; identical on every call and run)."""
    try:
        maker = IMAGES[name]
    except KeyError:
        raise KeyError(f"no pixtral golden image named {name!r}") from None
    return maker(np.random.default_rng(zlib.crc32(name.encode())))
