"""The deterministic images behind the gemma3 goldens (test support: numpy + Pillow only).

Each image is rebuilt from its name: pixels from a numpy generator seeded by the name,
bytes from Pillow's encoders. The goldens record every file's blake3, so an encoder
that drifts is caught before any pixel is compared. Nothing here imports mm_framework:
the golden generator runs it next to transformers.

The set covers what Gemma 3's processor treats specially: the fixed 896x896 resize
(from 10x10 up to 4000x3000, and 896x896 itself, which Pillow copies), pan-and-scan's
aspect-ratio threshold (just below, at and above 1.2), its crop counts (2, 3, 4 and the
cap), its minimum crop size (thin strips that get no crops), portrait and landscape,
and every Pillow mode that converts to RGB differently (1, L, LA, P, P+tRNS, RGBA,
CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

import functools
import io
import zlib
from collections.abc import Callable

import numpy as np
from PIL import Image

Maker = Callable[[np.random.Generator], bytes]


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(("gemma3:" + name).encode()))


def _encode(im: Image.Image, fmt: str, **params) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **params)
    return buf.getvalue()


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: smooth gradients, a few hard-edged discs and sensor noise."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.empty((h, w, 3), dtype=np.float32)
    for c in range(3):
        fx, fy, ph = rng.uniform(0.5, 4.0), rng.uniform(0.5, 4.0), rng.uniform(0, 6.28)
        base[..., c] = 128 + 100 * np.sin(xx * fx / max(w, 1) * 6.28 + ph) * np.cos(yy * fy / max(h, 1) * 6.28)
    for _ in range(5):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        r = rng.uniform(0.05, 0.3) * max(w, h)
        base[(xx - cx) ** 2 + (yy - cy) ** 2 < r * r] = rng.integers(0, 256, 3)
    base += rng.normal(0, 6, (h, w, 3)).astype(np.float32)
    return np.clip(np.rint(base), 0, 255).astype(np.uint8)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Screenshot-like RGB: flat panels, a title bar and rows of glyph-sized marks."""
    img = np.full((h, w, 3), 248, dtype=np.uint8)
    img[:40] = (32, 33, 36)
    img[40:, : w // 6] = (241, 243, 244)
    for y in range(64, h - 24, 20):
        x = w // 6 + 16
        while x < w - 32:
            gw = int(rng.integers(3, 30))
            img[y : y + 11, x : x + gw] = 24 if gw < 26 else rng.integers(0, 256, 3, dtype=np.uint8)
            x += gw + int(rng.integers(2, 8))
    return img


def _rgb(w: int, h: int, fmt: str, maker=photo, **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(maker(w, h, rng), "RGB"), fmt, **params)


def _mode(w: int, h: int, convert: Callable[[Image.Image], Image.Image], fmt: str = "PNG", **params) -> Maker:
    return lambda rng: _encode(convert(Image.fromarray(photo(w, h, rng), "RGB")), fmt, **params)


def _alpha(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Alpha ramp with a transparent hole, an opaque block and a noisy band."""
    a = np.tile(np.linspace(0, 255, w, dtype=np.float32).astype(np.uint8), (h, 1))
    a[h // 4 : h // 2, w // 4 : w // 2] = 0
    a[h // 2 :, w // 2 :] = 255
    a[: h // 8] = rng.integers(0, 256, (h // 8, w), dtype=np.uint8)
    return a


def _rgba(w: int, h: int, fmt: str, **params) -> Maker:
    return lambda rng: _encode(Image.fromarray(np.dstack([photo(w, h, rng), _alpha(w, h, rng)]), "RGBA"), fmt, **params)


def _la(rng: np.random.Generator) -> bytes:
    grey = Image.fromarray(photo(480, 320, rng), "RGB").convert("L")
    return _encode(Image.merge("LA", (grey, Image.fromarray(_alpha(480, 320, rng), "L"))), "PNG")


def _exif_rot6(rng: np.random.Generator) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to display
    return _encode(Image.fromarray(photo(1000, 400, rng), "RGB"), "JPEG", quality=90, exif=exif.tobytes())


def _png16_gray(rng: np.random.Generator) -> bytes:
    ramp = np.linspace(0, 65535, 640)[None, :] * np.ones((480, 1))
    v = (ramp + rng.integers(0, 256, (480, 640))).clip(0, 65535).astype("<u2")
    return _encode(Image.frombytes("I;16", (640, 480), v.tobytes()), "PNG")


def _gif(rng: np.random.Generator) -> bytes:
    frames = [Image.fromarray(photo(400, 300, rng), "RGB").quantize(255) for _ in range(2)]
    return _encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0, transparency=0)


# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": _rgb(10, 10, "PNG"),
    "exact_896x896.png": _rgb(896, 896, "PNG"),
    "rgb_640x480.jpg": _rgb(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": _rgb(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": _rgb(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": _rgb(1920, 1080, "PNG", maker=screenshot),
    "portrait_333x501.png": _rgb(333, 501, "PNG"),
    "ratio_below_599x500.png": _rgb(599, 500, "PNG"),
    "ratio_at_600x500.png": _rgb(600, 500, "PNG"),
    "wide_1000x300.jpg": _rgb(1000, 300, "JPEG", quality=90),
    "wide_2048x512.png": _rgb(2048, 512, "PNG"),
    "wide_cap_3000x500.jpg": _rgb(3000, 500, "JPEG", quality=90),
    "tall_400x2000.jpg": _rgb(400, 2000, "JPEG", quality=90),
    "narrow_crop_700x250.png": _rgb(700, 250, "PNG"),
    "thin_wide_3000x20.png": _rgb(3000, 20, "PNG"),
    "thin_tall_20x3000.png": _rgb(20, 3000, "PNG"),
    "gray_L_800x600.png": _mode(800, 600, lambda im: im.convert("L")),
    "bilevel_1_300x200.png": _mode(300, 200, lambda im: im.convert("L").convert("1")),
    "palette_P_500x375.png": _mode(500, 375, lambda im: im.quantize(64)),
    "palette_P_trns_320x240.png": _mode(320, 240, lambda im: im.quantize(32), transparency=3),
    "rgba_640x480.png": _rgba(640, 480, "PNG"),
    "gray_alpha_LA_480x320.png": _la,
    "cmyk_640x480.jpg": _mode(640, 480, lambda im: im.convert("CMYK"), "JPEG", quality=90),
    "exif_rot6_1000x400.jpg": _exif_rot6,
    "png16_gray_640x480.png": _png16_gray,
    "anim_400x300.gif": _gif,
    "lossy_640x480.webp": _rgb(640, 480, "WEBP", quality=80),
    "rgba_lossless_600x300.webp": _rgba(600, 300, "WEBP", lossless=True),
}


@functools.lru_cache(maxsize=None)
def make(name: str) -> bytes:
    """The encoded bytes of image ``name`` (cached; identical on every call and run)."""
    try:
        maker = IMAGES[name]
    except KeyError:
        raise KeyError(f"no gemma3 golden image named {name!r}") from None
    return maker(_rng(name))
