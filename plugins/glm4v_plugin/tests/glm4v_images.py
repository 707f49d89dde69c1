"""The deterministic images behind the glm4v tests and goldens (numpy + Pillow only).

Each image is rebuilt from its name by the makers of :mod:`mm_framework.testing.images`
with its default photo and screenshot recipes. The set covers what GLM-4V's resize treats
specially (docs/families/glm4v.md): the temporal patch counted in the pixel bounds (so a
size is on the grid, below min_pixels or above max_pixels at half Qwen2-VL's bounds: 56x56
sits exactly on the lower bound), sides shorter than the 28-pixel factor (raised to it
first and truncated), aspect ratios up to the 200 bound once raised, photos and document
pages from tiny to 12 MP, and every Pillow mode that converts to RGB its own way (1, L,
LA, P, P+tRNS, RGBA, CMYK), EXIF orientations 3, 6 and 8, GIF and WebP; and two images
refused (a ratio above 200, 16-bit grey).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from mm_framework.testing.images import Maker, Makers, encode, image_table, photo

m = Makers()


def exif_rotated(w: int, h: int, orientation: int) -> Maker:
    """A JPEG photo whose EXIF orientation tag is ``orientation`` (Makers has only 6)."""

    def make(rng: np.random.Generator) -> bytes:
        exif = Image.Exif()
        exif[0x0112] = orientation
        return encode(Image.fromarray(photo(w, h, rng)), "JPEG", quality=90, exif=exif.tobytes())

    return make


# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "photo_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "photo_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "huge_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "portrait_3000x4000.jpg": m.still(3000, 4000, "JPEG", quality=85),
    "slide_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "page_a4_150dpi_1240x1754.png": m.screen(1240, 1754, "PNG"),
    "page_a4_300dpi_2480x3508.png": m.screen(2480, 3508, "PNG"),
    "page_letter_100dpi_850x1100.jpg": m.screen(850, 1100, "JPEG", quality=90),
    "tall_page_1000x8000.png": m.screen(1000, 8000, "PNG"),
    "square_2200x2200.png": m.still(2200, 2200, "PNG"),
    "on_grid_812x532.png": m.still(812, 532, "PNG"),
    "min_bound_56x56.png": m.still(56, 56, "PNG"),
    "small_60x40.png": m.still(60, 40, "PNG"),
    "small_80x80.png": m.still(80, 80, "PNG"),
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "tiny_1x1.png": m.still(1, 1, "PNG"),
    "tiny_27x5.png": m.still(27, 5, "PNG"),
    "line_600x24.png": m.still(600, 24, "PNG"),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "strip_1x150.png": m.still(1, 150, "PNG"),
    "strip_199x1.png": m.still(199, 1, "PNG"),
    "ratio_5500x28.png": m.still(5500, 28, "PNG"),
    "odd_333x501.png": m.still(333, 501, "PNG"),
    "gray_L_800x1100.png": m.converted(800, 1100, "L"),
    "bilevel_1_1275x1650.png": m.converted(1275, 1650, "L", "1"),
    "exif_rot3_640x480.jpg": exif_rotated(640, 480, 3),
    "exif_rot8_300x700.jpg": exif_rotated(300, 700, 8),
    # Pillow's modes; png16_gray_640x480.png is refused by mm_framework only (transformers
    # clamps 16-bit grey to 0..255).
    **m.modes(),
    # Refused by both: a ratio of 300 (transformers' ValueError, our MediaError).
    "ratio_1x300.png": m.still(1, 300, "PNG"),
}
REFUSED = ("ratio_1x300.png", "png16_gray_640x480.png")
# The images the reference processes (the live tests' matrix); the others are rejections.
ACCEPTED = [n for n in IMAGES if n not in REFUSED]

make = image_table("glm4v", IMAGES, salt="glm4v:")
