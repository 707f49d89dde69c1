"""The deterministic images behind the paddleocr_vl tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by the makers of :mod:`mm_framework.testing.images`
with its default photo and screenshot recipes (a screenshot's panels and glyph rows stand
in for a document page). The set covers what PaddleOCR-VL's resize treats specially:
document pages (A4 and letter, portrait, at several dpi, and one above max_pixels), tiny
images below min_pixels, sides shorter than the 28-pixel factor (raised to it first),
aspect ratios near the 200 bound once raised, a size already on the grid (no resize), and
every Pillow mode that converts to RGB its own way (1, L, LA, P, P+tRNS, RGBA, CMYK),
EXIF orientation, GIF and WebP; and two images refused (a ratio above 200, 16-bit grey).
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "page_a4_150dpi_1240x1754.png": m.screen(1240, 1754, "PNG"),
    "page_a4_300dpi_2480x3508.png": m.screen(2480, 3508, "PNG"),
    "page_letter_100dpi_850x1100.jpg": m.screen(850, 1100, "JPEG", quality=90),
    "page_scan_1700x2200.jpg": m.still(1700, 2200, "JPEG", quality=85),
    "slide_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "photo_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "huge_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "on_grid_784x392.png": m.still(784, 392, "PNG"),
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "tiny_1x1.png": m.still(1, 1, "PNG"),
    "tiny_27x5.png": m.still(27, 5, "PNG"),
    "line_600x24.png": m.still(600, 24, "PNG"),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "strip_1x150.png": m.still(1, 150, "PNG"),
    "ratio_5500x28.png": m.still(5500, 28, "PNG"),
    "odd_333x501.png": m.still(333, 501, "PNG"),
    "gray_L_800x1100.png": m.converted(800, 1100, "L"),
    "bilevel_1_1275x1650.png": m.converted(1275, 1650, "L", "1"),
    # Pillow's modes; png16_gray_640x480.png is refused by mm_framework only (transformers
    # clamps 16-bit grey to 0..255).
    **m.modes(),
    # Refused by both: a ratio of 300 (transformers' ValueError, our MediaError).
    "ratio_1x300.png": m.still(1, 300, "PNG"),
}
# The images the reference processes (the live tests' matrix); the others are rejections.
ACCEPTED = [n for n in IMAGES if n not in ("ratio_1x300.png", "png16_gray_640x480.png")]

make = image_table("paddleocr_vl", IMAGES, salt="paddleocr_vl:")
