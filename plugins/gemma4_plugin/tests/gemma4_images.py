"""The deterministic images behind the gemma4 goldens (test support: numpy + Pillow only).

Each image is rebuilt from its name by the makers of :mod:`mm_framework.testing.images` with
their default photo and screenshot recipes; the goldens record every file's blake3. The
golden generator imports this table next to transformers, where
``mm_framework.testing.images`` is loaded without mm_framework
(:mod:`mm_framework.testing.standalone`).

The set covers what Gemma 4's aspect-ratio preserving resize treats specially: upscaling
(10x10, 1x1), a size that is already its own target (768x768 and 912x672 are left unresized),
downscaling up to 12 MP, both orientations, thin strips whose short side rounds to zero
blocks (the fallback: one block by ``floor(long / short)`` blocks, capped), 1xN and Nx1 lines,
tall pages, and every Pillow mode that converts to RGB differently (1, L, LA, P, P+tRNS,
RGBA, CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

from mm_framework.testing.images import Maker, Makers, image_table

m = Makers()

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "pixel_1x1.png": m.still(1, 1, "PNG"),
    "exact_768x768.png": m.still(768, 768, "PNG"),
    "exact_912x672.png": m.still(912, 672, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "wide_1000x300.jpg": m.still(1000, 300, "JPEG", quality=90),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "tall_page_800x4000.png": m.screen(800, 4000, "PNG"),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_fallback_6000x20.png": m.still(6000, 20, "PNG"),
    "thin_fallback_20x6000.png": m.still(20, 6000, "PNG"),
    "line_2000x1.png": m.still(2000, 1, "PNG"),
    "line_1x700.png": m.still(1, 700, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("gemma4", IMAGES, salt="gemma4:")
