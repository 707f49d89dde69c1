"""The deterministic images behind the gemma3 goldens (test support: numpy + Pillow only).

Each image is rebuilt from its name by the makers of :mod:`mm_framework.testing.images`,
with this family's own pixel recipes below; the goldens record every file's blake3, so
an encoder that drifts is caught before any pixel is compared. The golden generator
imports this table next to transformers, where ``mm_framework.testing.images`` is loaded
without mm_framework (:mod:`mm_framework.testing.standalone`).

The set covers what Gemma 3's processor treats specially: the fixed 896x896 resize
(from 10x10 up to 4000x3000, and 896x896 itself, which Pillow copies), pan-and-scan's
aspect-ratio threshold (just below, at and above 1.2), its crop counts (2, 3, 4 and the
cap), its minimum crop size (thin strips that get no crops), portrait and landscape,
and every Pillow mode that converts to RGB differently (1, L, LA, P, P+tRNS, RGBA,
CMYK, 16-bit), EXIF orientation, GIF and WebP.
"""

from __future__ import annotations

import numpy as np

from mm_framework.testing.images import Maker, Makers, glyph_rows, image_table, panels


def photo(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Photo-like RGB: smooth gradients, a few hard-edged discs and sensor noise."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.empty((h, w, 3), dtype=np.float32)
    for c in range(3):
        fx, fy, ph = rng.uniform(0.5, 4.0), rng.uniform(0.5, 4.0), rng.uniform(0, 6.28)
        base[..., c] = 128 + 100 * np.sin(xx * fx / max(w, 1) * 6.28 + ph) * np.cos(yy * fy / max(h, 1) * 6.28)
    for _ in range(5):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        r = rng.uniform(0.05, 0.3) * max(w, h)
        base[(xx - cx) ** 2 + (yy - cy) ** 2 < r * r] = rng.integers(0, 256, 3)
    base += rng.normal(0, 6, (h, w, 3)).astype(np.float32)
    return np.clip(np.rint(base), 0, 255).astype(np.uint8)


def screenshot(w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """Screenshot-like RGB: flat panels, a title bar and rows of glyph-sized marks."""
    img = panels(w, h, 248, (40, (32, 33, 36)), (w // 6, (241, 243, 244)))
    glyph_rows(img, rng, range(64, h - 24, 20), left=w // 6 + 16, right=32, height=11, widths=(3, 30), gaps=(2, 8),
               ink=lambda rng, width: 24 if width < 26 else rng.integers(0, 256, 3, dtype=np.uint8))
    return img


m = Makers(photo=photo, screenshot=screenshot)

# name -> maker; the order is the order of the goldens.
IMAGES: dict[str, Maker] = {
    "tiny_10x10.png": m.still(10, 10, "PNG"),
    "exact_896x896.png": m.still(896, 896, "PNG"),
    "rgb_640x480.jpg": m.still(640, 480, "JPEG", quality=90),
    "rgb_1280x960.jpg": m.still(1280, 960, "JPEG", quality=90),
    "large_4000x3000.jpg": m.still(4000, 3000, "JPEG", quality=85),
    "screenshot_1920x1080.png": m.screen(1920, 1080, "PNG"),
    "portrait_333x501.png": m.still(333, 501, "PNG"),
    "ratio_below_599x500.png": m.still(599, 500, "PNG"),
    "ratio_at_600x500.png": m.still(600, 500, "PNG"),
    "wide_1000x300.jpg": m.still(1000, 300, "JPEG", quality=90),
    "wide_2048x512.png": m.still(2048, 512, "PNG"),
    "wide_cap_3000x500.jpg": m.still(3000, 500, "JPEG", quality=90),
    "tall_400x2000.jpg": m.still(400, 2000, "JPEG", quality=90),
    "narrow_crop_700x250.png": m.still(700, 250, "PNG"),
    "thin_wide_3000x20.png": m.still(3000, 20, "PNG"),
    "thin_tall_20x3000.png": m.still(20, 3000, "PNG"),
    "gray_L_800x600.png": m.converted(800, 600, "L"),
    "bilevel_1_300x200.png": m.converted(300, 200, "L", "1"),
    **m.modes(),
}

make = image_table("gemma3", IMAGES, salt="gemma3:")
