"""The benchmark's inputs, rebuilt deterministically on every run (numpy + Pillow only).

Pixels come from the test toolkit's image recipes (``mm_framework.testing.images``:
``photo``, a smooth colour field with hard-edged shapes and sensor noise; ``screenshot``,
flat panels and glyph rows), seeded by the input's name; bytes from Pillow's encoders.
The SHA-256 of every encoded input is printed with the results, so two runs can be
checked to have measured the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
import io

import attrs
from PIL import Image

from mm_framework.testing.images import Makers, name_rng


@attrs.frozen
class Input:
    """One benchmark input: a request of one or more encoded images."""

    name: str
    images: tuple[bytes, ...]

    @property
    def sizes(self) -> list[tuple[int, int]]:
        return [Image.open(io.BytesIO(d)).size for d in self.images]

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for d in self.images:
            h.update(hashlib.sha256(d).digest())
        return h.hexdigest()[:16]


_MAKERS = Makers()


def _jpeg(name: str, w: int, h: int) -> bytes:
    return _MAKERS.still(w, h, "JPEG", quality=90)(name_rng(name))


# The 8-image request: photos of the common camera/phone/web sizes, every one distinct.
_REQUEST_SIZES = [(1280, 960), (1024, 768), (960, 1280), (800, 600)] * 2


@functools.lru_cache(maxsize=None)
def inputs() -> dict[str, Input]:
    """name -> input, in table order."""
    single = {
        "jpeg_640x480": _jpeg("jpeg_640x480", 640, 480),
        "jpeg_1280x960": _jpeg("jpeg_1280x960", 1280, 960),
        "png_screenshot_1920x1080": _MAKERS.screen(1920, 1080, "PNG")(name_rng("png_screenshot_1920x1080")),
        "jpeg_4000x3000": _jpeg("jpeg_4000x3000", 4000, 3000),
    }
    out = {name: Input(name, (data,)) for name, data in single.items()}
    request = tuple(_jpeg(f"request8_{i}", w, h) for i, (w, h) in enumerate(_REQUEST_SIZES))
    out["request_8_images"] = Input("request_8_images", request)
    return out
