"""Deterministic test clips for Inkling's audio (numpy only, so the golden generator and the
tests make the same samples): the held-out set the feature tolerance is measured on, and
the encoded files of the request cases.

Each clip is drawn from a generator seeded by its name; ``clip(name)`` gives float32 mono
samples at 16 kHz.
"""

from __future__ import annotations

import io
import zlib

import numpy as np

RATE = 16000


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _t(seconds: float, rate: int = RATE) -> np.ndarray:
    return np.arange(int(seconds * rate)) / rate


def _noise(rng: np.random.Generator, seconds: float, scale: float) -> np.ndarray:
    return scale * rng.standard_normal(int(seconds * RATE))


def _speechlike(rng: np.random.Generator, seconds: float) -> np.ndarray:
    """Noise through a moving formant, in syllable-rate bursts: energy in every mel band."""
    t = _t(seconds)
    carrier = np.sin(2 * np.pi * (150 + 40 * np.sin(2 * np.pi * 3 * t)) * t)
    formant = np.sin(2 * np.pi * (700 + 500 * np.sin(2 * np.pi * 0.7 * t)) * t)
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) ** 2
    return 0.2 * envelope * (carrier + 0.5 * formant) + 0.01 * rng.standard_normal(len(t))


# name -> recipe(rng); the held-out set covers noise, tones, chirps, silence, loud, short, long.
RECIPES = {
    "noise": lambda r: _noise(r, 3.0, 0.1),
    "noise_loud": lambda r: np.clip(_noise(r, 2.0, 3.0), -1, 1),
    "noise_quiet": lambda r: _noise(r, 1.0, 1e-4),
    "tone_440": lambda r: 0.5 * np.sin(2 * np.pi * 440 * _t(2.0)),
    "tones_1k_3k": lambda r: 0.3 * np.sin(2 * np.pi * 1000 * _t(2.3)) + 0.2 * np.sin(2 * np.pi * 3100 * _t(2.3)),
    "tone_7k_plus_noise": lambda r: 0.4 * np.sin(2 * np.pi * 7000 * _t(1.5)) + _noise(r, 1.5, 0.01),
    "chirp_up": lambda r: 0.5 * np.sin(2 * np.pi * (100 * _t(4.0) + 900 * _t(4.0) ** 2)),
    "chirp_down": lambda r: 0.5 * np.sin(2 * np.pi * (7000 * _t(3.0) - 1100 * _t(3.0) ** 2)),
    "speechlike": lambda r: _speechlike(r, 5.0),
    "silence": lambda r: np.zeros(RATE),
    "clipped_square": lambda r: np.sign(np.sin(2 * np.pi * 220 * _t(1.0))),
    "short_7": lambda r: _noise(r, 7 / RATE, 0.3),
    "one_sample": lambda r: np.array([0.5]),
    "one_hop_plus_1": lambda r: _noise(r, 801 / RATE, 0.2),
    "long_speechlike": lambda r: _speechlike(r, 20.0),
}


def clip(name: str) -> np.ndarray:
    """The float32 mono samples at 16 kHz of ``RECIPES[name]``."""
    return np.asarray(RECIPES[name](_rng(name)), dtype=np.float32)


def encode(samples: np.ndarray, rate: int, fmt: str, subtype: str) -> bytes:
    """``samples`` (``[N]`` or ``[N, channels]``) encoded by soundfile."""
    import soundfile

    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format=fmt, subtype=subtype)
    return buf.getvalue()


def source_clip(name: str, rate: int, seconds: float, channels: int = 1) -> np.ndarray:
    """A speech-like clip at ``rate`` (for the request cases' encoded files), ``[N, channels]``."""
    rng = _rng(name)
    t = _t(seconds, rate)
    base = 0.3 * np.sin(2 * np.pi * (200 + 30 * np.sin(2 * np.pi * 2 * t)) * t) * (1 + np.sin(2 * np.pi * 3 * t))
    chans = [base + 0.02 * rng.standard_normal(len(t)) for _ in range(channels)]
    return np.stack(chans, axis=1).astype(np.float32)
