"""Pillow images to numpy arrays in one pass (the decoder's and the Pillow resizers' exit)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from . import native


def rgb_array(im: Image.Image) -> np.ndarray:
    """HWC uint8 array (read-only) of a loaded ``RGB`` image, packed in a single pass.

    The same bytes as ``np.asarray(im)``, whose ``tobytes`` packs the image 64 KiB at a
    time and then joins the pieces (a second full copy, and allocator churn that costs
    several milliseconds per megapixel). With the native kernels, the 4-byte pixels
    Pillow shares through its Arrow export are packed in C (docs/kernels.md, "RGB
    export"); otherwise Pillow's own raw encoder, the one ``tobytes`` uses, packs the
    whole image into one buffer. ``Image._getencoder`` is private Pillow API (the
    version is pinned to 13.x); anything unexpected falls back to ``np.asarray``.
    """
    w, h = im.size
    n = w * h * 3
    if im.mode == "RGB" and n > 0:
        packed = native.rgb_from_arrow(im) if native.use_native() else None
        if packed is not None:
            packed.flags.writeable = False
            return packed
        try:
            encoder = Image._getencoder("RGB", "raw", "RGB")
            encoder.setimage(im.im, (0, 0, w, h))
            _, status, data = encoder.encode(n)
        except Exception:  # private API changed: take the public path
            status, data = 0, b""
        if status == 1 and len(data) == n:
            return np.frombuffer(data, dtype=np.uint8).reshape(h, w, 3)
    return np.asarray(im)
