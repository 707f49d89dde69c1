"""Encoded audio for the audio tests, written with soundfile (the ``audio`` extra)."""

from __future__ import annotations

import io

import numpy as np


def tone(seconds: float, rate: int, channels: int = 1, seed: int = 0) -> np.ndarray:
    """A chirp plus noise, float32 ``[frames, channels]`` in [-1, 1)."""
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    rng = np.random.default_rng(seed)
    cols = [0.5 * np.sin(2 * np.pi * (200 + 400 * c + 300 * t) * t) + 0.05 * rng.standard_normal(n)
            for c in range(channels)]
    return np.clip(np.stack(cols, axis=1), -0.99, 0.99).astype(np.float32)


def encode(samples: np.ndarray, rate: int, fmt: str = "WAV", subtype: str | None = None) -> bytes:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, samples, rate, format=fmt, subtype=subtype)
    return buf.getvalue()


def wav(seconds: float = 1.0, rate: int = 16000, channels: int = 1) -> bytes:
    return encode(tone(seconds, rate, channels), rate, "WAV", "PCM_16")


def wav_at_rate(rate: int) -> bytes:
    """A 0.1 s WAV whose fmt chunk declares ``rate`` (and the byte rate that goes with it)."""
    data = bytearray(wav(0.1))
    data[24:28] = rate.to_bytes(4, "little")
    data[28:32] = (2 * rate).to_bytes(4, "little")
    return bytes(data)


def flac_claiming(frames: int, rate: int = 16000) -> bytes:
    """A short FLAC whose STREAMINFO claims ``frames`` samples (36 bits at byte 18)."""
    data = bytearray(encode(tone(0.1, rate), rate, "FLAC"))
    v = int.from_bytes(data[18:26], "big")
    data[18:26] = ((v >> 36 << 36) | frames).to_bytes(8, "big")
    return bytes(data)


# (format, subtype, source rate) that soundfile writes and this libsndfile reads.
FORMATS = [
    ("WAV", "PCM_16", 16000), ("WAV", "FLOAT", 44100), ("FLAC", "PCM_24", 48000), ("OGG", "VORBIS", 22050),
    ("OGG", "OPUS", 48000), ("MP3", "MPEG_LAYER_III", 44100),
]
