"""The deterministic images behind the kimi_k25 tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by :mod:`mm_framework.testing.images`' makers and
recipes; the goldens record every file's blake3. The set covers what Kimi_K25ImageProcessor
treats specially: sides below one patch (one patch per side counted, padded to one merge
kernel), sizes at and just past the merge kernel, images kept at their size, images scaled
down by the 16384-patch budget (a 12 MP photo, 1792x1792 at the budget, 1800x1800 past it),
strips capped by the 512-patch side, 1-pixel strips, and every Pillow mode that converts to
RGB differently (L, 1, LA, P, P+tRNS, RGBA, CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "one_1x1.png": m.still(1, 1, "PNG"),
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "sub_patch_13x27.png": m.still(13, 27, "PNG"),
    "kernel_28x28.png": m.still(28, 28, "PNG"),
    "past_kernel_29x57.png": m.still(29, 57, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "budget_1792x1792.png": m.still(1792, 1792, "PNG"),
    "past_budget_1800x1800.jpg": m.still(1800, 1800, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "odd_777x333.png": m.still(777, 333, "PNG"),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "strip_1x500.png": m.still(1, 500, "PNG"),
    "strip_600x1.png": m.still(600, 1, "PNG"),
    "capped_8000x20.png": m.still(8000, 20, "PNG"),
    "capped_20x8000.png": m.still(20, 8000, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("kimi_k25", IMAGES, salt="kimi_k25:")
