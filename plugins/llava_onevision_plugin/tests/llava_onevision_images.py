"""The deterministic images behind the llava_onevision goldens (numpy + Pillow only).

Every image is rebuilt from its name alone by the makers of
:mod:`mm_framework.testing.images`, with this family's own pixel recipes below (the
16-bit grey PNG is written by hand, since Pillow has no such encoder). The goldens
record each file's blake3, so an encoder that drifts is caught before any pixel is
compared. The golden generator imports this table inside the reference environment,
where ``mm_framework.testing.images`` is loaded without mm_framework
(:mod:`mm_framework.testing.standalone`).

The set is chosen for what the anyres path treats specially: sizes that land on each
kind of grid pinpoint (1x1 crop up to 6x6, exact pinpoint sizes that skip the resize),
thin strips whose unpadded feature count hinges on ``round(.., 7)``, images large enough
for the ``anyres_max_9`` cap, every Pillow mode that converts to RGB its own way (1, L,
LA, P, P+tRNS, RGBA, CMYK, 16-bit grey), EXIF orientation, GIF, lossy and lossless WebP.
"""

from __future__ import annotations

import functools

import numpy as np

from mm_framework.testing.images import (
    Maker, Makers, alpha_ramp, blocks, glyph_rows, grey16, image_table, panels, rectangles,
)


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: low-frequency colour waves, a few sharp rectangles, grain."""
    yy = np.linspace(0.0, 1.0, h, dtype=np.float64)[:, None]
    xx = np.linspace(0.0, 1.0, w, dtype=np.float64)[None, :]
    phase = rng.uniform(0, 2 * np.pi, 3)
    freq = rng.uniform(1.5, 6.0, (3, 2))
    planes = [128 + 90 * np.sin(2 * np.pi * (freq[c, 0] * yy + freq[c, 1] * xx) + phase[c]) for c in range(3)]
    img = np.stack(planes, axis=-1)
    rectangles(img, rng, 5, lambda side: max(1, side // 4) + 1)
    img += rng.normal(0.0, 9.0, (h, w, 3))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """UI-like RGB: flat panels, a menu bar, text-sized dark marks, hard colour blocks."""
    img = panels(w, h, 246, (40, (32, 36, 44)), (w // 6, (228, 232, 238)))
    glyph_rows(img, rng, range(64, h - 24, 20), left=w // 6 + 16, right=32, height=11, widths=(3, 48), gaps=(4, 10),
               ink=lambda rng, width: (24, 24, 24) if width < 40 else rng.integers(0, 256, 3))
    blocks(img, rng, 6, top=50, bottom=60, right=140, size=(30, 130))
    return img


m = Makers(photo=photo, screenshot=screenshot, alpha=functools.partial(alpha_ramp, band=10, ramp=np.float64))

# name -> maker, in golden order.
IMAGES: dict[str, Maker] = {
    "tiny_1x1.png": m.still(1, 1, "PNG"),
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "odd_333x501.png": m.still(333, 501, "PNG"),
    "exact_384x384.png": m.still(384, 384, "PNG"),
    "exact_1152x768.png": m.still(1152, 768, "PNG"),
    "photo_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "photo_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "photo_1024x899.jpg": m.still(1024, 899, "JPEG", quality=92),
    "huge_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "screenshot_2560x1440.png": m.screen(2560, 1440, "PNG"),
    "thin_20x3000.png": m.still(20, 3000, "PNG"),
    "thin_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_1x2304.png": m.still(1, 2304, "PNG"),
    "thin_4000x7.png": m.still(4000, 7, "PNG"),
    "grey_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    "palette_P_500x375.png": m.palette(500, 375, 48),
    "palette_P_trns_320x240.png": m.palette(320, 240, 24, transparency=2),
    "alpha_RGBA_640x480.png": m.rgba(640, 480, "PNG"),
    "alpha_LA_320x240.png": m.grey_alpha(320, 240),
    "alpha_lossless_400x300.webp": m.rgba(400, 300, "WEBP", lossless=True),
    "cmyk_640x480.jpg": m.converted(640, 480, "CMYK", fmt="JPEG", quality=90),
    "exif_rot6_640x480.jpg": m.exif_rot6(640, 480),
    "grey16_320x240.png": grey16(320, 240, 512, by_hand=True),
    "anim_320x240.gif": m.gif(320, 240, 200, duration=80, loop=0),
    "lossy_640x480.webp": m.still(640, 480, "WEBP", quality=80),
}

make = image_table("llava_onevision", IMAGES)
