"""The deterministic images behind the llama4 tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by :mod:`mm_framework.testing.images`' makers and
recipes; the goldens record every file's blake3. The set covers what Llama4ImageProcessor
treats specially: tiny images (upscaled only up to one tile, then padded), sizes at and just
past a tile (one tile without a thumbnail, then two), canvases of every aspect from 1x16
strips to 16x1, a 12 MP photo (downscaled into the 16-tile canvas), 1-pixel strips, and every
Pillow mode that converts to RGB differently (L, 1, LA, P, P+tRNS, RGBA, CMYK, 16-bit),
EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "one_1x1.png": m.still(1, 1, "PNG"),
    "tile_336x336.png": m.still(336, 336, "PNG"),
    "past_tile_337x336.png": m.still(337, 336, "PNG"),
    "two_tiles_672x336.png": m.still(672, 336, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "huge_5000x700.png": m.still(5000, 700, "PNG"),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "odd_777x333.png": m.still(777, 333, "PNG"),
    "wide_1000x300.jpg": m.still(1000, 300, "JPEG", quality=90),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "strip_1x500.png": m.still(1, 500, "PNG"),
    "strip_600x1.png": m.still(600, 1, "PNG"),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("llama4", IMAGES, salt="llama4:")
