"""Short deterministic clips made with PyAV (test support, also for the golden generator).

Each clip is named ``<codec>_<w>x<h>_<frames>f_<fps>fps``; its frames are smooth gradients that move
plus seeded noise, so resizing and chunking have something to get wrong.
"""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np

# name: (codec, width, height, frames, fps)
CLIPS = {
    "mpeg4_100x60_30f_10fps": ("mpeg4", 100, 60, 30, 10),
    "mpeg4_320x240_9f_6fps": ("mpeg4", 320, 240, 9, 6),
    "h264_64x36_7f_30fps": ("libx264", 64, 36, 7, 30),
}


def frames(name: str) -> np.ndarray:
    _, w, h, n, _ = CLIPS[name]
    rng = np.random.default_rng(sum(name.encode()))
    y, x = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), dtype=np.uint8)
    for k in range(n):
        base = np.stack([(x * 255 // max(1, w - 1) + 9 * k) % 256, (y * 255 // max(1, h - 1) + 5 * k) % 256,
                         ((x + y + 13 * k) * 3) % 256], axis=-1)
        out[k] = np.clip(base + rng.integers(-20, 21, size=(h, w, 3)), 0, 255).astype(np.uint8)
    return out


def make(name: str) -> bytes:
    """The encoded clip ``name`` (MP4)."""
    import av

    codec, w, h, _, fps = CLIPS[name]
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="mp4") as box:
        stream = box.add_stream(codec, rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        if codec == "libx264":
            stream.options = {"crf": "18", "preset": "ultrafast", "threads": "1"}
        else:
            stream.bit_rate = 2_000_000
            stream.thread_count = 1
        for frame in frames(name):
            box.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        box.mux(stream.encode())
    return buf.getvalue()
