"""Test support: small MP4 clips with a video stream and (optionally) an audio stream, made
with PyAV from a seed, for the ``use_audio_in_video`` tests (test_omni_av*.py)."""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np


def frames(seed: int, n: int, width: int, height: int) -> np.ndarray:
    """``n`` uint8 frames of moving gradients with a little noise (they compress)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    out = np.empty((n, height, width, 3), np.uint8)
    for k in range(n):
        for c in range(3):
            out[k, :, :, c] = (x * (c + 1) + y * (3 - c) + 9 * k * (c + 2)) % 256
    return np.clip(out.astype(np.int16) + rng.integers(-6, 7, out.shape), 0, 255).astype(np.uint8)


def tone(seed: int, n: int, rate: int, channels: int) -> np.ndarray:
    """float32 ``[channels, n]`` samples: a tone per channel plus noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / rate
    out = [np.sin(2 * np.pi * rng.uniform(100, 3000) * t) * rng.uniform(0.1, 0.6) for _ in range(channels)]
    return (np.stack(out) + rng.standard_normal((channels, n)) * 0.05).astype(np.float32)


def mp4(seed: int, *, n_frames: int = 8, fps: int = 4, width: int = 96, height: int = 64,
        audio_rate: int | None = 16000, seconds: float | None = None, channels: int = 1) -> bytes:
    """An MP4 of ``n_frames`` MPEG-4 frames at ``fps`` and, unless ``audio_rate`` is None,
    an AAC track of ``seconds`` (the video's length by default) at ``audio_rate``."""
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as box:
        video = box.add_stream("mpeg4", rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        video.codec_context.thread_count = 1
        audio = None
        if audio_rate is not None:
            audio = box.add_stream("aac", rate=audio_rate)
            audio.codec_context.layout = "mono" if channels == 1 else "stereo"
            audio.codec_context.thread_count = 1
        for k, rgb in enumerate(frames(seed, n_frames, width, height)):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = k, Fraction(1, fps)
            box.mux(video.encode(frame))
        box.mux(video.encode())
        if audio is not None:
            n = round((n_frames / fps if seconds is None else seconds) * audio_rate)
            samples = tone(seed + 1, n, audio_rate, channels)
            step = 1024
            for at in range(0, n, step):
                block = np.ascontiguousarray(samples[:, at:at + step])
                frame = av.AudioFrame.from_ndarray(block, format="fltp", layout=audio.codec_context.layout.name)
                frame.sample_rate, frame.pts, frame.time_base = audio_rate, at, Fraction(1, audio_rate)
                box.mux(audio.encode(frame))
            box.mux(audio.encode())
    return buf.getvalue()
