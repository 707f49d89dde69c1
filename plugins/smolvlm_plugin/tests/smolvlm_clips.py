"""Short clips for the smolvlm video tests, encoded with PyAV (``mm_framework.testing.images``' light helpers).

Each frame is a gradient drifting with the frame number plus seeded noise, so every frame
differs and resizing has detail to filter. Encoders are not bit-stable across FFmpeg
builds, so tests make fresh clips and compare against the reference on the same bytes.
"""

from __future__ import annotations

from fractions import Fraction

from mm_framework.testing.images import mp4, noise_frames

# name -> (width, height, frames, rate): MPEG-4 part 2 in mp4, yuv420p (even sides).
CLIPS = {
    "clip_64x48_40f_10fps.mp4": (64, 48, 40, 10),
    "clip_32x48_6f_ntsc.mp4": (32, 48, 6, Fraction(30000, 1001)),
    "clip_48x32_75f_1fps.mp4": (48, 32, 75, 1),
}


def make(name: str) -> bytes:
    width, height, count, rate = CLIPS[name]
    return mp4(noise_frames(width, height, count, len(name)), rate)
