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


# (container, codec, rate) PyAV encodes and libsndfile cannot read: lossy, then lossless.
AV_LOSSY = [("mp4", "aac", 44100), ("ipod", "aac", 16000), ("mov", "aac", 22050), ("webm", "libopus", 48000),
            ("matroska", "aac", 16000), ("mp4", "libmp3lame", 44100)]
AV_LOSSLESS = [("mp4", "alac", 16000), ("ipod", "alac", 44100), ("matroska", "flac", 22050), ("mp4", "flac", 16000),
               ("mov", "pcm_s16le", 16000), ("matroska", "pcm_s16le", 8000)]


def av_encode(samples: np.ndarray, rate: int, fmt: str, codec: str, video: bool = False, title: str = "") -> bytes:
    """``samples`` (float32 ``[frames, channels]``) as an audio stream PyAV encodes, after a
    small video stream when ``video``; integer encoders get int16 PCM (``round(x * 32767)``)."""
    import av

    buf = io.BytesIO()
    frames, channels = samples.shape
    with av.open(buf, "w", format=fmt) as out:
        if title:
            out.metadata["title"] = title
        vs = out.add_stream("libvpx-vp9" if fmt == "webm" else "mpeg4", rate=10) if video else None
        s = out.add_stream(codec, rate=rate, layout="mono" if channels == 1 else "stereo")
        if vs is not None:
            vs.width, vs.height, vs.pix_fmt = 32, 24, "yuv420p"
            for _ in range(max(1, frames * 10 // rate)):
                out.mux(vs.encode(av.VideoFrame.from_ndarray(np.zeros((24, 32, 3), np.uint8), format="rgb24")))
            out.mux(vs.encode())
        name = s.codec_context.format.name
        kind = name.rstrip("p")
        pcm = np.round(samples * 32767).astype(np.int16)
        data = {"flt": samples, "s16": pcm, "s32": pcm.astype(np.int32) << 16}[kind]
        step = s.codec_context.frame_size or 1024
        for i in range(0, frames, step):
            block = data[i:i + step]
            arr = np.ascontiguousarray(block.T if name.endswith("p") else block.reshape(1, -1))
            frame = av.AudioFrame.from_ndarray(arr, format=name, layout=s.layout.name)
            frame.sample_rate, frame.pts = rate, i
            out.mux(s.encode(frame))
        out.mux(s.encode())
    return buf.getvalue()
