"""The deterministic image set behind the pixtral goldens (numpy + Pillow only).

Each image is rebuilt from its name by the makers of :mod:`mm_framework.testing.images`,
with this family's own pixel recipes below; the goldens record the blake3 of every
file, so an encoder that drifts is caught before any pixel is compared. The generator
imports this table inside the reference environment, where
``mm_framework.testing.images`` is loaded without mm_framework
(:mod:`mm_framework.testing.standalone`).

The set covers what Pixtral sizing treats differently (upscaled tiny images, exact patch
multiples, downscaled photos and a 12-megapixel JPEG, thin strips on both sides of the
degenerate floor) and every Pillow mode whose RGB conversion differs (1, L, P, P with
transparency, RGBA, LA, CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

import functools

import numpy as np

from mm_framework.testing.images import (
    Maker, Makers, alpha_ramp, glyph_rows, grain, grey16, image_table, panels, smooth_cells,
)


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: bilinear-smoothed colour cells, hard-edged rectangles, grain."""
    img = smooth_cells(w, h, rng, 40)
    for _ in range(5):
        # The colour is drawn before the sides (the goldens' images were made in that order).
        y, x = int(rng.integers(0, h)), int(rng.integers(0, w))
        colour = rng.integers(0, 256, 3)
        dy, dx = int(rng.integers(1, h // 3 + 2)), int(rng.integers(1, w // 3 + 2))
        img[y : y + dy, x : x + dx] = colour
    return grain(img, rng, 10)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Screenshot-like RGB: flat panels, a menu bar and lines of glyph-sized blocks."""
    img = panels(w, h, 246, (40, (32, 33, 36)), (w // 6, (228, 231, 236)))
    glyph_rows(img, rng, range(64, h - 24, 20), left=w // 6 + 20, right=30, height=11, widths=(3, 30), gaps=(2, 8),
               ink=lambda rng, width: 24 if width < 26 else rng.integers(0, 256, 3))
    return img


m = Makers(photo=photo, screenshot=screenshot, alpha=functools.partial(alpha_ramp, band=10, ramp=np.float64))

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "odd_70x50.png": m.still(70, 50, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "exact_1024x768.png": m.still(1024, 768, "PNG"),
    "photo_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "photo_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "huge_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "tall_20x3000.png": m.still(20, 3000, "PNG"),
    "wide_3000x20.png": m.still(3000, 20, "PNG"),
    "sliver_3000x3.png": m.still(3000, 3, "PNG"),
    "degenerate_2000x1.png": m.still(2000, 1, "PNG"),
    "grey_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_200x100.png": m.converted(200, 100, "1"),
    "palette_P_500x375.png": m.palette(500, 375, 64),
    "palette_trns_500x375.png": m.palette(500, 375, 32, transparency=5),
    "rgba_640x480.png": m.rgba(640, 480, "PNG"),
    "grey_alpha_LA_320x240.png": m.grey_alpha(320, 240),
    "cmyk_640x480.jpg": m.converted(640, 480, "CMYK", fmt="JPEG", quality=90),
    "exif_rot6_640x480.jpg": m.exif_rot6(640, 480),
    "grey16_640x480.png": grey16(640, 480, 512),
    "anim_320x240.gif": m.gif(320, 240, 200, duration=80, loop=0),
    "lossy_640x480.webp": m.still(640, 480, "WEBP", quality=80),
    "alpha_lossless_320x240.webp": m.rgba(320, 240, "WEBP", lossless=True),
}

make = image_table("pixtral", IMAGES)
