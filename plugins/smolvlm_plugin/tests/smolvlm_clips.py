"""Short clips for the smolvlm video tests, encoded with PyAV (numpy + PyAV only).

Each frame is a gradient drifting with the frame number plus seeded noise, so every frame
differs and resizing has detail to filter. Encoders are not bit-stable across FFmpeg
builds, so tests make fresh clips and compare against the reference on the same bytes.
"""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np

# name -> (width, height, frames, rate): MPEG-4 part 2 in mp4, yuv420p (even sides).
CLIPS = {
    "clip_64x48_40f_10fps.mp4": (64, 48, 40, 10),
    "clip_32x48_6f_ntsc.mp4": (32, 48, 6, Fraction(30000, 1001)),
    "clip_48x32_75f_1fps.mp4": (48, 32, 75, 1),
}


def frames(width: int, height: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    out = np.empty((count, height, width, 3), np.uint8)
    for k in range(count):
        base = np.stack([x * 255 / width, y * 255 / height, (x + y + 9 * k) % 256], axis=-1)
        out[k] = np.clip(base + rng.normal(0, 24, base.shape) + 5 * k, 0, 255).astype(np.uint8)
    return out


def make(name: str) -> bytes:
    import av

    width, height, count, rate = CLIPS[name]
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as c:
        s = c.add_stream("mpeg4", rate=rate)
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        for f in frames(width, height, count, len(name)):
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return buf.getvalue()
