"""Short clips for the glm4v video tests, encoded with PyAV (mpeg4, a few frames, small sizes).

Each frame is smooth noise panning sideways with a brightness drift, so every frame differs
and resizing has detail to filter. Encoders are not bit-stable across FFmpeg builds: the
goldens commit the bytes; the live tests encode afresh and compare with the reference then.
"""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np

NTSC = Fraction(30000, 1001)
# name -> (width, height, frames, rate)
CLIPS = {
    "64x48_20f_10fps": (64, 48, 20, 10),
    "50x36_45f_29.97fps": (50, 36, 45, NTSC),
    "34x18_7f_10fps": (34, 18, 7, 10),
    "64x48_1f_10fps": (64, 48, 1, 10),
    "96x20_70f_25fps": (96, 20, 70, 25),
}


def frame(w: int, h: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (max(2, h // 5), max(2, (w + 3 * k + 8) // 5), 3)).astype(np.float64)
    big = np.kron(coarse, np.ones((5, 5, 1)))[:h, 3 * k : 3 * k + w]
    pic = big + rng.integers(-12, 13, big.shape) + 30.0 * np.sin(k / 2.0)
    return np.clip(pic, 0, 255).astype(np.uint8)


def encode(name: str) -> bytes:
    import av

    w, h, n, rate = CLIPS[name]
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream("mpeg4", rate=rate)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        for k in range(n):
            for p in s.encode(av.VideoFrame.from_ndarray(frame(w, h, k, 7), format="rgb24")):
                out.mux(p)
        for p in s.encode():
            out.mux(p)
    return buf.getvalue()
