"""The deterministic audio clips of the qwen2_audio goldens and tests, by file name.

Each clip is synthesized from a generator seeded by its name (a vowel-like harmonic tone
with a moving pitch, a chirp, a little noise, a slow envelope) and encoded by soundfile
(libsndfile) in the format and subtype its entry names, so the golden generator and the
replay rebuild the same bytes; cases hold each clip's blake3, and replay checks it. The
clips whose bytes differ from one run to the next (:func:`stored`) are kept in their case
directories instead. numpy and soundfile only (the generator runs without mm_framework).
"""

from __future__ import annotations

import hashlib
import io

import numpy as np

# name -> (seconds, sample rate, channels, soundfile format, subtype)
CLIPS: dict[str, tuple[float, int, int, str, str]] = {
    "voice_16k_mono_3s.wav": (3.0, 16000, 1, "WAV", "PCM_16"),
    "tone_44k1_stereo_2s.wav": (2.0, 44100, 2, "WAV", "PCM_16"),
    "float_48k_mono_0s6.wav": (0.6, 48000, 1, "WAV", "FLOAT"),
    "chirp_22k05_mono_4s.flac": (4.0, 22050, 1, "FLAC", "PCM_24"),
    "music_44k1_stereo_5s.mp3": (5.0, 44100, 2, "MP3", "MPEG_LAYER_III"),
    "noise_48k_stereo_3s.ogg": (3.0, 48000, 2, "OGG", "VORBIS"),
    "voice_48k_mono_2s.opus": (2.0, 48000, 1, "OGG", "OPUS"),
    "exact_16k_mono_30s.wav": (30.0, 16000, 1, "WAV", "PCM_16"),
    "long_16k_mono_37s.flac": (37.0, 16000, 1, "FLAC", "PCM_16"),
    "long_44k1_stereo_31s.wav": (31.0, 44100, 2, "WAV", "PCM_16"),
    "short_8k_mono_0s4.wav": (0.4, 8000, 1, "WAV", "PCM_16"),
    "short_16k_mono_50ms.wav": (0.05, 16000, 1, "WAV", "PCM_16"),
    "short_44k1_mono_7ms.wav": (0.007, 44100, 1, "WAV", "PCM_16"),
    "tiny_16k_mono_10ms.wav": (0.01, 16000, 1, "WAV", "PCM_16"),
    "silence_16k_mono_1s.wav": (1.0, 16000, 1, "WAV", "PCM_16"),
}


def samples(name: str) -> np.ndarray:
    """The float32 ``[frames, channels]`` signal of clip ``name`` (before encoding)."""
    seconds, rate, channels, _, _ = CLIPS[name]
    n = round(seconds * rate)
    if name.startswith("silence"):
        return np.zeros((n, channels), np.float32)
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little"))
    t = np.arange(n) / rate
    f0 = rng.uniform(110, 240) * (1 + 0.08 * np.sin(2 * np.pi * rng.uniform(0.5, 3) * t))
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voice = sum(rng.uniform(0.2, 1) / k * np.sin(k * phase) for k in range(1, 9))
    f1, f2 = rng.uniform(200, 600), min(rate / 2 - 200, rng.uniform(2000, 7000))
    chirp = np.sin(2 * np.pi * (f1 * t + (f2 - f1) * t**2 / (2 * max(seconds, 1e-3))))
    envelope = 0.55 + 0.45 * np.sin(2 * np.pi * rng.uniform(0.3, 2) * t + rng.uniform(0, 6))
    mono = envelope * (0.25 * voice + 0.15 * chirp) + 0.02 * rng.standard_normal(n)
    return np.stack([mono * (1 - 0.35 * c) for c in range(channels)], axis=1).astype(np.float32)


def make(name: str) -> bytes:
    """Clip ``name`` encoded as its entry says."""
    import soundfile

    _, rate, _, fmt, subtype = CLIPS[name]
    buf = io.BytesIO()
    soundfile.write(buf, samples(name), rate, format=fmt, subtype=subtype)
    return buf.getvalue()


def stored(name: str) -> bool:
    """Whether clip ``name`` is kept as a file: libsndfile gives every Ogg stream a random
    serial number and writes a timestamped PEAK chunk into float WAV files."""
    _, _, _, fmt, subtype = CLIPS[name]
    return fmt == "OGG" or subtype == "FLOAT"
