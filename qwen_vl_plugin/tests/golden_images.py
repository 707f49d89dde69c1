"""The deterministic image set behind the qwen_vl goldens (test support; numpy + Pillow only).

Each image is rebuilt from its name by the makers of :mod:`mm_framework.testing.images`
(pixels: its ``photo`` and ``screenshot`` recipes); the goldens record the digest of
every file, so a changed encoder is caught before any pixel is compared. The golden
generator imports this table inside the reference environment, where
``mm_framework.testing.images`` is loaded without mm_framework
(:mod:`mm_framework.testing.standalone`).

The set spans the cases transformers treats specially: sizes from 10x10 to 4000x3000,
thin images on both sides of the 200:1 aspect limit, every Pillow mode that converts
to RGB differently (1, L, LA, P, P+tRNS, RGBA, CMYK, 16-bit), EXIF orientation, GIF,
lossy and lossless WebP, a screenshot and photo-like JPEGs.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, grey16, image_table, photo, screenshot

__all__ = ["IMAGES", "make", "photo", "screenshot"]

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "halfround_98x70.png": m.still(98, 70, "PNG"),
    "rgb_333x501.png": m.still(333, 501, "PNG"),
    "exact_448x448.png": m.still(448, 448, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "tall_20x3000.png": m.still(20, 3000, "PNG"),
    "wide_3000x20.png": m.still(3000, 20, "PNG"),
    "ratio200_10x2000.png": m.still(10, 2000, "PNG"),
    "toowide_3000x10.png": m.still(3000, 10, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_200x100.png": m.converted(200, 100, "L", "1"),
    "palette_P_500x375.png": m.palette(500, 375, 64),
    "palette_P_trns_320x240.png": m.palette(320, 240, 32, transparency=3),
    "rgba_640x480.png": m.rgba(640, 480, "PNG"),
    "gray_alpha_LA_320x240.png": m.grey_alpha(320, 240),
    "cmyk_640x480.jpg": m.converted(640, 480, "CMYK", fmt="JPEG", quality=90),
    "exif_rot6_640x480.jpg": m.exif_rot6(640, 480),
    "png16_gray_640x480.png": grey16(640, 480, 256),
    "png16_rgb_640x480.png": m.rgb16(640, 480),
    "anim_320x240.gif": m.gif(320, 240, 255, duration=100, loop=0, transparency=0),
    "lossy_640x480.webp": m.still(640, 480, "WEBP", quality=80),
    "rgba_lossless_320x240.webp": m.rgba(320, 240, "WEBP", lossless=True),
}

make = image_table("qwen_vl", IMAGES)
