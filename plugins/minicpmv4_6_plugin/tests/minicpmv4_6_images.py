"""The deterministic images behind the minicpmv4_6 tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by :mod:`mm_framework.testing.images`' makers; the
goldens record every file's blake3. The set covers what the slicing treats specially: tiny
images (upscaled to the budget), sizes at and around one 448x448 budget (the source image
alone, or the first 1x2 / 2x1 grids), every grid shape the 9-slice cap reaches, 1xN and Nx1
strips (extreme log aspect ratios), tall pages, a 12 MP photo, and every Pillow mode that
converts to RGB differently (L, 1, LA, P, P+tRNS, RGBA, CMYK, 16-bit), EXIF orientation, GIF
and WebP.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "one_1x1.png": m.still(1, 1, "PNG"),
    "strip_1x300.png": m.still(1, 300, "PNG"),
    "strip_700x1.png": m.still(700, 1, "PNG"),
    "budget_448x448.png": m.still(448, 448, "PNG"),
    "over_449x448.png": m.still(449, 448, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "huge_5000x700.png": m.still(5000, 700, "PNG"),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "odd_777x333.png": m.still(777, 333, "PNG"),
    "square_1344x1344.png": m.still(1344, 1344, "PNG"),
    "wide_1000x300.jpg": m.still(1000, 300, "JPEG", quality=90),
    "tall_page_800x3000.png": m.screen(800, 3000, "PNG"),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("minicpmv4_6", IMAGES, salt="minicpmv4_6:")
