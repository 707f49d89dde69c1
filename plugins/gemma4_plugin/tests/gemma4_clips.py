"""Short clips for the gemma4 video tests, encoded with PyAV (numpy + PyAV only, no mm_framework).

Each frame is a smooth gradient that drifts with the frame number plus seeded noise, so
every frame differs and resizing has detail to filter. Encoders are not bit-stable across
FFmpeg builds: the golden generator stores the bytes it used, and live tests make fresh ones.
"""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np

# name -> (width, height, frames, rate): MPEG-4 part 2 in mp4, yuv420p (even sides).
CLIPS = {
    "clip_64x48_40f_10fps.mp4": (64, 48, 40, 10),
    "clip_96x32_30f_12fps.mp4": (96, 32, 30, 12),
    "clip_32x24_130f_1fps.mp4": (32, 24, 130, 1),
    "clip_40x60_6f_ntsc.mp4": (40, 60, 6, Fraction(30000, 1001)),
}


def frames(width: int, height: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    out = np.empty((count, height, width, 3), np.uint8)
    for k in range(count):
        base = np.stack([x * 255 / width, y * 255 / height, (x + y + 9 * k) % 256], axis=-1)
        out[k] = np.clip(base + rng.normal(0, 24, base.shape) + 5 * k, 0, 255).astype(np.uint8)
    return out


def encode(width: int, height: int, count: int, rate, seed: int = 0) -> bytes:
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as c:
        s = c.add_stream("mpeg4", rate=rate)
        s.width, s.height, s.pix_fmt = width, height, "yuv420p"
        for f in frames(width, height, count, seed):
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return buf.getvalue()


def make(name: str) -> bytes:
    return encode(*CLIPS[name], seed=len(name))
