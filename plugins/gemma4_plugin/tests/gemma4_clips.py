"""Short clips for the gemma4 video tests, encoded with PyAV (``mm_framework.testing.images``' light helpers).

Each frame is a smooth gradient that drifts with the frame number plus seeded noise, so
every frame differs and resizing has detail to filter. Encoders are not bit-stable across
FFmpeg builds: the golden generator stores the bytes it used, and live tests make fresh ones.
"""

from __future__ import annotations

from fractions import Fraction

from mm_framework.testing.images import mp4, noise_frames

# name -> (width, height, frames, rate): MPEG-4 part 2 in mp4, yuv420p (even sides).
CLIPS = {
    "clip_64x48_40f_10fps.mp4": (64, 48, 40, 10),
    "clip_96x32_30f_12fps.mp4": (96, 32, 30, 12),
    "clip_32x24_130f_1fps.mp4": (32, 24, 130, 1),
    "clip_40x60_6f_ntsc.mp4": (40, 60, 6, Fraction(30000, 1001)),
}


def encode(width: int, height: int, count: int, rate, seed: int = 0) -> bytes:
    return mp4(noise_frames(width, height, count, seed), rate)


def make(name: str) -> bytes:
    return encode(*CLIPS[name], seed=len(name))
