"""The deterministic images behind the deepseek_ocr2 tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by :mod:`mm_framework.testing.images`' makers and
recipes; the goldens record every file's blake3. The set covers what DeepSeek-OCR-2's image
processor treats specially: tiny images (upscaled global view, no crops), sides at and just
above the 768 tile (crops start above it), exactly the 1024 global side (Pillow's copy),
every crop grid from 1x2 to 6x1 and the tie-break between equally close grids, 1xN strips
(a short side that rounds to a 1-pixel or empty global view), tall pages, 12 MP photos,
and every Pillow mode that converts to RGB differently (L, 1, LA, P, P+tRNS, RGBA, CMYK,
16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "one_1x1.png": m.still(1, 1, "PNG"),
    "tile_768x768.png": m.still(768, 768, "PNG"),
    "above_tile_769x769.png": m.still(769, 769, "PNG"),
    "global_1024x1024.png": m.still(1024, 1024, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "photo_12mp_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "page_a4_1240x1754.png": m.screen(1240, 1754, "PNG"),
    "tall_page_800x4000.png": m.screen(800, 4000, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "odd_777x333.png": m.still(777, 333, "PNG"),
    "wide_1000x300.jpg": m.still(1000, 300, "JPEG", quality=90),
    "tie_1600x800.png": m.still(1600, 800, "PNG"),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "strip_2000x1.png": m.still(2000, 1, "PNG"),
    "strip_1x900.png": m.still(1, 900, "PNG"),
    "strip_3000x1.png": m.still(3000, 1, "PNG"),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("deepseek_ocr2", IMAGES, salt="deepseek_ocr2:")
