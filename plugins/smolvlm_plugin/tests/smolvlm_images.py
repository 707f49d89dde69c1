"""The deterministic images behind the smolvlm tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by :mod:`mm_framework.testing.images`' makers and
recipes; the goldens record every file's blake3. The set covers what the Idefics3/SmolVLM
image processor treats specially: tiny images (upscaled to the full grid), sizes exactly
at and around a tile (1x1 grid, the global image alone), every grid shape from 1x2 to 4x4,
odd short edges rounded up to even, extreme strips (a short side that truncates to a
1-pixel tile row), and every Pillow mode that converts to RGB differently (L, 1, LA, P,
P+tRNS, RGBA, CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "one_1x1.png": m.still(1, 1, "PNG"),
    "tile_512x512.png": m.still(512, 512, "PNG"),
    "tile_364x364.png": m.still(364, 364, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "huge_5000x700.png": m.still(5000, 700, "PNG"),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "odd_777x333.png": m.still(777, 333, "PNG"),
    "wide_1000x300.jpg": m.still(1000, 300, "JPEG", quality=90),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("smolvlm", IMAGES, salt="smolvlm:")
