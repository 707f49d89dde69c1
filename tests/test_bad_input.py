"""The bad-input matrix (docs/bad-input.md): every hostile input ends in one typed error.

Each case runs through one shared ``qwen2_vl`` pipeline with a good image before the bad
one where the case has items, and asserts: the error class (or acceptance), the item
index, under a second, a bounded allocation, and that the pipeline still gives the exact
same output for a good request afterwards.
"""

from __future__ import annotations

import base64
import functools
import io
import os
import re
import struct
import tempfile
import time
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.testing import sample_image
from mm_framework.testing import assert_same_output

from .media.audio_helpers import av_encode, encode, flac_claiming, tone, wav, wav_at_rate

pytest.importorskip("qwen_vl_plugin")

SPEC = mmf.preset("qwen2_vl")
PAD = SPEC["image_token_id"]
GOOD = sample_image(64, 48, "JPEG", 1)
GOOD_PNG = sample_image(64, 48, "PNG", 1)
DOCS = Path(__file__).parent.parent / "docs" / "bad-input.md"
MAX_SECONDS = 1.0
MAX_ALLOC = 64 << 20


def enc(fmt: str, im: Image.Image | None = None, **kw) -> bytes:
    im = im if im is not None else Image.open(io.BytesIO(sample_image(64, 48, "PNG", 2))).convert("RGB")
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def png_header(w: int, h: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def jpeg_bomb() -> bytes:
    data = bytearray(enc("JPEG"))
    sof = data.index(b"\xff\xc0")
    struct.pack_into(">HH", data, sof + 5, 65000, 65000)  # height, width in SOF0
    return bytes(data)


def many_frame_gif(n: int = 3000) -> bytes:
    frames = [Image.new("P", (8, 8), i % 256) for i in range(n)]
    buf = io.BytesIO()
    frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    return buf.getvalue()


def sized(w: int, h: int) -> bytes:
    return enc("PNG", Image.new("RGB", (w, h), (90, 120, 150)))


def mode_image(mode: str) -> bytes:
    base = Image.open(io.BytesIO(sample_image(40, 30, "PNG", 3)))
    if mode == "CMYK":
        return enc("JPEG", base.convert("CMYK"))
    if mode == "I;16":
        return enc("PNG", Image.fromarray(np.full((30, 40), 40000, dtype=np.uint16)))
    if mode == "RGB48":
        buf = io.BytesIO()
        arr = np.full((30, 40, 3), 0x1234, dtype=">u2")
        # Pillow cannot write 48-bit PNG: build it (colour type 2, depth 16) by hand.
        raw = b"".join(b"\0" + arr[y].tobytes() for y in range(30))
        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        buf.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 40, 30, 16, 2, 0, 0, 0))
                  + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
        return buf.getvalue()
    return enc("PNG", base.convert(mode))


def fifo(tmp: Path) -> str:
    path = tmp / "fifo"
    os.mkfifo(path)
    return str(path)


def file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# id -> (builder(tmp) -> (images, ids, limits or None), expected class name or "accepted", item index)
CASES = {
    "zero-byte input": (lambda t: ([GOOD, b""], None, None), "MediaError", 1),
    "text bytes": (lambda t: ([GOOD, b"just some text\n"], None, None), "MediaError", 1),
    "HTML bytes": (lambda t: ([GOOD, b"<!doctype html><html><body>hi</body></html>"], None, None), "MediaError", 1),
    "truncated JPEG": (lambda t: ([GOOD, enc("JPEG")[:300]], None, None), "MediaError", 1),
    "truncated PNG": (lambda t: ([GOOD, enc("PNG")[:200]], None, None), "MediaError", 1),
    "truncated GIF": (lambda t: ([GOOD, enc("GIF")[:200]], None, None), "MediaError", 1),
    "truncated WebP": (lambda t: ([GOOD, enc("WEBP")[:100]], None, None), "MediaError", 1),
    "bit-flipped JPEG header": (lambda t: ([GOOD, flip(enc("JPEG"), 20)], None, None), "MediaError", 1),
    "bit-flipped PNG chunk (CRC)": (
        lambda t: ([GOOD, flip(enc("PNG"), len(enc("PNG")) // 2)], None, None), "MediaError", 1),
    "bit-flipped GIF signature": (lambda t: ([GOOD, flip(enc("GIF"), 1)], None, None), "MediaError", 1),
    "bit-flipped WebP header": (lambda t: ([GOOD, flip(enc("WEBP"), 20)], None, None), "MediaError", 1),
    "bit-flipped JPEG entropy data": (
        lambda t: ([GOOD, flip(enc("JPEG"), len(enc("JPEG")) // 2)], None, None), "accepted", None),
    "PNG header claiming 100000x100000": (
        lambda t: ([GOOD, png_header(100_000, 100_000)], None, None), "LimitExceededError", 1),
    "JPEG bomb declaring 65000x65000": (lambda t: ([GOOD, jpeg_bomb()], None, None), "LimitExceededError", 1),
    "PNG bomb under a limit above Pillow's": (
        lambda t: ([GOOD, png_header(100_000, 100_000)], None, mmf.Limits(max_image_pixels=10**10)),
        "LimitExceededError", 1),
    "GIF with 3000 frames": (lambda t: ([many_frame_gif()], None, None), "accepted", None),
    "16-bit grey PNG": (lambda t: ([GOOD, mode_image("I;16")], None, None), "MediaError", 1),
    "48-bit RGB PNG": (lambda t: ([mode_image("RGB48")], None, None), "accepted", None),
    "CMYK JPEG": (lambda t: ([mode_image("CMYK")], None, None), "accepted", None),
    "palette PNG": (lambda t: ([mode_image("P")], None, None), "accepted", None),
    "LA PNG": (lambda t: ([mode_image("LA")], None, None), "accepted", None),
    "1-bit PNG": (lambda t: ([mode_image("1")], None, None), "accepted", None),
    "1x1 image": (lambda t: ([sized(1, 1)], None, None), "accepted", None),
    "1x40000 image": (lambda t: ([GOOD, sized(1, 40000)], None, None), "MediaError", 1),
    "aspect ratio 200 (10x2000)": (lambda t: ([sized(2000, 10)], None, None), "accepted", None),
    "aspect ratio 201 (10x2010)": (lambda t: ([GOOD, sized(2010, 10)], None, None), "MediaError", 1),
    "data: URL without a comma": (lambda t: ([GOOD, "data:image/png;base64" + b64(GOOD)], None, None), "MediaError", 1),
    "data: URL with a wrong media type": (
        lambda t: (["data:text/plain;base64," + b64(GOOD)], None, None), "accepted", None),
    "data: URL with invalid base64": (lambda t: ([GOOD, "data:image/png;base64,***"], None, None), "MediaError", 1),
    "base64 with whitespace inside": (
        lambda t: ([GOOD, "data:image/png;base64," + b64(GOOD)[:40] + "\n" + b64(GOOD)[40:]], None, None),
        "MediaError", 1),
    "path that does not exist": (lambda t: ([GOOD, str(t / "missing.png")], None, None), "FetchError", 1),
    "path to a directory": (lambda t: ([GOOD, str(t)], None, None), "FetchError", 1),
    "device file /dev/zero": (lambda t: ([GOOD, "/dev/zero"], None, None), "FetchError", 1),
    "FIFO": (lambda t: ([GOOD, fifo(t)], None, None), "FetchError", 1),
    "65 images": (lambda t: ([GOOD] * 65, None, None), "LimitExceededError", None),
    "sources past the request budget": (
        lambda t: ([GOOD, GOOD, GOOD], None, mmf.Limits(max_request_bytes=2 * len(GOOD) + 10)),
        "LimitExceededError", 2),
    "negative input id": (lambda t: ([GOOD], [PAD, -7], None), "InvalidInputError", None),
    "input id above int32": (lambda t: ([GOOD], [2**31, PAD], None), "InvalidInputError", None),
    "more placeholders than images": (lambda t: ([GOOD], [PAD, 5, PAD], None), "LayoutError", None),
    "fewer placeholders than images": (lambda t: ([GOOD, GOOD], [5, PAD], None), "LayoutError", None),
}


# --- videos ---------------------------------------------------------------------------------
VPAD = SPEC["video_token_id"]
QWEN3 = mmf.preset("qwen3_vl") if "qwen3_vl" in mmf.list_presets() else None


def _frame(w: int, h: int, k: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([(xx * 7 + k * 19) % 256, (yy * 5 + k * 3) % 256, (xx + yy + k * 11) % 256], -1).astype(np.uint8)


@functools.cache
def needs_av(data: bytes) -> bytes:
    """Bytes passed as an encoded video: only PyAV decodes (and so rejects) them, so the case
    skips without it."""
    pytest.importorskip("av")
    return data


def clip(n: int = 30, codec: str = "mpeg4", fmt: str = "mp4", faststart: bool = False) -> bytes:
    """An encoded ``n``-frame 32x24 clip at 10 fps (faststart: the index before the data)."""
    av = pytest.importorskip("av")
    if codec not in av.codecs_available:
        pytest.skip(f"this PyAV has no {codec} encoder")
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "clip." + fmt)
        with av.open(target, "w", format=fmt, options={"movflags": "faststart"} if faststart else {}) as out:
            s = out.add_stream(codec, rate=10)
            s.width, s.height, s.pix_fmt = 32, 24, "yuv420p"
            for k in range(n):
                out.mux(s.encode(av.VideoFrame.from_ndarray(_frame(32, 24, k), format="rgb24")))
            out.mux(s.encode())
        return Path(target).read_bytes()


def audio_only() -> bytes:
    av = pytest.importorskip("av")
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream("aac", rate=8000)
        for i in range(3):
            fr = av.AudioFrame.from_ndarray(np.zeros((1, 1024), np.float32), format="fltp", layout="mono")
            fr.sample_rate, fr.pts = 8000, i * 1024
            out.mux(s.encode(fr))
        out.mux(s.encode())
    return buf.getvalue()


def short_stream() -> bytes:
    """An MP4 whose index says 30 frames and whose data ends cleanly after a few (a clip
    whose header disagrees with its real frame count)."""
    data = clip(faststart=True)
    return data[: int(len(data) * 0.6)]


def h264(cut: float) -> bytes:
    data = clip(codec="libx264", faststart=True)
    return data[: data.find(b"mdat") + 4] if cut == 0 else data[: int(len(data) * cut)]


FRAMES = np.stack([_frame(32, 24, k) for k in range(6)])

# id -> (builder(tmp) -> (images, videos, ids or None, limits or None), preset, expected, item index)
VIDEO_CASES = {
    "MP4 clip after an image": (lambda t: ([GOOD], [clip()], None, None), SPEC, "accepted", None),
    "clip as a data: URL": (
        lambda t: ([], ["data:video/mp4;base64," + b64(clip())], None, None), SPEC, "accepted", None),
    "decoded clip (uint8 frames)": (lambda t: ([GOOD], [FRAMES], None, None), SPEC, "accepted", None),
    "zero-byte video": (lambda t: ([GOOD], [needs_av(b"")], None, None), SPEC, "MediaError", 1),
    "text bytes as a video": (lambda t: ([GOOD], [needs_av(b"just some text\n")], None, None), SPEC, "MediaError", 1),
    "PNG image as a video": (lambda t: ([GOOD], [needs_av(GOOD_PNG)], None, None), SPEC, "MediaError", 1),
    "GIF as a video (no frame rate)": (lambda t: ([GOOD], [needs_av(enc("GIF"))], None, None), SPEC, "MediaError", 1),
    "audio-only M4A": (lambda t: ([GOOD], [audio_only()], None, None), SPEC, "MediaError", 1),
    "WebM clip (no frame count)": (
        lambda t: ([GOOD], [clip(5, "libvpx-vp9", "webm")], None, None), SPEC, "MediaError", 1),
    "MP4 with its index cut off": (lambda t: ([GOOD], [clip()[: len(clip()) // 2]], None, None), SPEC, "MediaError", 1),
    "zero-frame MP4 (index, no frames)": (lambda t: ([GOOD], [h264(0)], None, None), SPEC, "MediaError", 1),
    "truncated H.264 MP4": (lambda t: ([GOOD], [h264(0.6)], None, None), SPEC, "MediaError", 1),
    "clip shorter than its header, every frame": (
        lambda t: ([GOOD], [short_stream()], None, None), SPEC, "accepted", None),
    "clip shorter than its header, sampled past its end": (
        lambda t: ([GOOD], [short_stream()], None, None), QWEN3, "MediaError", 1),
    "one-frame clip for Qwen3-VL": (lambda t: ([GOOD], [clip(1)], None, None), QWEN3, "MediaError", 1),
    "clip above the frame limit": (
        lambda t: ([GOOD], [clip()], None, mmf.Limits(max_video_frames=29)), SPEC, "LimitExceededError", 1),
    "clip above the video pixel limit": (
        lambda t: ([GOOD], [clip()], None, mmf.Limits(max_video_pixels=30 * 32 * 24 - 1)),
        SPEC, "LimitExceededError", 1),
    "decoded clip of float32 frames": (
        lambda t: ([GOOD], [FRAMES.astype(np.float32)], None, None), SPEC, "InvalidInputError", 1),
    "decoded clip with frames of two sizes": (
        lambda t: ([GOOD], [[FRAMES[0], FRAMES[1, :20]]], None, None), SPEC, "InvalidInputError", 1),
    "decoded clip with a negative fps": (
        lambda t: ([GOOD], [mmf.VideoFrames(FRAMES, fps=-10.0)], None, None), SPEC, "InvalidInputError", 1),
    "video path that does not exist": (lambda t: ([GOOD], [str(t / "missing.mp4")], None, None), SPEC, "FetchError", 1),
    "MP4 clip as an image": (lambda t: ([GOOD, clip()], [], None, None), SPEC, "MediaError", 1),
    "WebM clip as an image": (lambda t: ([GOOD, clip(5, "libvpx-vp9", "webm")], [], None, None), SPEC, "MediaError", 1),
    "MP4 file as an image, named": (
        lambda t: ([GOOD, file(t / "clip.mp4", clip())], [], None, None), SPEC, "MediaError", 1),
    "more video placeholders than videos": (
        lambda t: ([], [FRAMES], [5, VPAD, 6, VPAD], None), SPEC, "LayoutError", None),
    "video placeholder in an image request": (lambda t: ([GOOD], [], [PAD, 5, VPAD], None), SPEC, "LayoutError", None),
    "image placeholder in a video request": (lambda t: ([], [FRAMES], [VPAD, PAD], None), SPEC, "LayoutError", None),
}


# --- audio (qwen2_vl takes none: refused before any I/O, decoded or encoded) -------------------
# id -> (audio source, item index); the qwen_vl family takes no audio.
AUDIO_CASES = {
    "WAV bytes to a family without audio": (b"RIFF\x24\x00\x00\x00WAVEfmt ", 1),
    "decoded audio with NaN to a family without audio": (
        mmf.Audio(np.array([np.nan], np.float32), sample_rate=16000), 1),
    "audio URL to a family without audio": ("https://x.invalid/a.wav", 1),
}


# --- audio, on a family that takes it (qwen2_audio) -------------------------------------------
def sf_bytes(make):
    """Encoded audio made with soundfile (the ``audio`` extra); the case skips without it."""
    pytest.importorskip("soundfile")
    pytest.importorskip("soxr")
    return make()


def half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _mp3() -> bytes:
    return encode(tone(1.0, 44100, 2), 44100, "MP3", "MPEG_LAYER_III")


def _flac() -> bytes:
    return encode(tone(1.0, 16000), 16000, "FLAC", "PCM_16")


APAD = 151646  # qwen2_audio's <|AUDIO|>
def av_audio(fmt: str, codec: str, seconds: float = 1.0, video: bool = False) -> bytes:
    """Audio in a container only PyAV reads; the case skips without it."""
    pytest.importorskip("av")
    rate = 48000 if codec == "libopus" else 16000
    return av_encode(tone(seconds, rate, 2), rate, fmt, codec, video=video)


SILENCE = np.zeros(16000, np.float32)
# id -> (builder(tmp) -> (audio source, limits or None), expected class name or "accepted", item index)
AUDIO_FAMILY_CASES = {
    "zero-byte audio": (lambda t: (b"", None), "MediaError", 1),
    "text bytes as audio": (lambda t: (b"just some text\n" * 8, None), "MediaError", 1),
    "PNG image as audio": (lambda t: (GOOD_PNG, None), "MediaError", 1),
    "WAV cut inside its header": (lambda t: (sf_bytes(wav)[:40], None), "MediaError", 1),
    "WAV cut inside its samples": (lambda t: (half(sf_bytes(wav)), None), "accepted", None),
    "truncated FLAC": (lambda t: (half(sf_bytes(_flac)), None), "MediaError", 1),
    "truncated MP3": (lambda t: (half(sf_bytes(_mp3)), None), "MediaError", 1),
    "FLAC with a zeroed frame": (
        lambda t: ((lambda d: d[:2000] + bytes(64) + d[2064:])(sf_bytes(_flac)), None), "MediaError", 1),
    "FLAC header claiming 10 hours": (
        lambda t: (sf_bytes(lambda: flac_claiming(10 * 3600 * 16000)), None), "LimitExceededError", 1),
    "WAV of 0 samples": (lambda t: (sf_bytes(lambda: wav(0.0)), None), "MediaError", 1),
    "WAV at 0 Hz": (lambda t: (sf_bytes(lambda: wav_at_rate(0)), None), "MediaError", 1),
    "WAV at 10 MHz": (lambda t: (sf_bytes(lambda: wav_at_rate(10_000_000)), None), "MediaError", 1),
    "WAV of 64 channels": (lambda t: (sf_bytes(lambda: wav(0.05, 16000, 64)), None), "MediaError", 1),
    "float WAV holding NaN": (lambda t: (sf_bytes(lambda: encode(np.full((800, 1), np.nan, np.float32), 16000, "WAV",
                                                                    "FLOAT")), None), "MediaError", 1),
    "AIFF": (lambda t: (sf_bytes(lambda: encode(tone(0.1, 16000), 16000, "AIFF", "PCM_16")), None),
             "UnsupportedError", 1),
    "CAF": (lambda t: (sf_bytes(lambda: encode(tone(0.1, 16000), 16000, "CAF", "PCM_16")), None),
            "UnsupportedError", 1),
    "WAV above the seconds limit": (lambda t: (sf_bytes(lambda: wav(2.0)), mmf.Limits(max_audio_seconds=1)),
                                    "LimitExceededError", 1),
    "M4A (AAC)": (lambda t: (av_audio("ipod", "aac"), None), "accepted", None),
    "WebM (Opus)": (lambda t: (av_audio("webm", "libopus"), None), "accepted", None),
    "audio track of an MP4 clip": (lambda t: (av_audio("mp4", "aac", video=True), None), "accepted", None),
    "MP4 clip without audio": (lambda t: (clip(), None), "MediaError", 1),
    "M4A cut in half (no index)": (lambda t: (half(av_audio("ipod", "aac")), None), "MediaError", 1),
    "WebM cut in half": (lambda t: (half(av_audio("webm", "libopus", 2.0)), None), "MediaError", 1),
    "M4A above the seconds limit": (lambda t: (av_audio("ipod", "aac", 2.0), mmf.Limits(max_audio_seconds=1)),
                                    "LimitExceededError", 1),
    "bare ADTS AAC": (lambda t: (av_audio("adts", "aac"), None), "UnsupportedError", 1),
    "audio path that does not exist": (lambda t: (str(t / "missing.wav"), None), "FetchError", 1),
    "decoded audio with NaN": (
        lambda t: (mmf.Audio(np.where(np.arange(16000) == 7, np.nan, SILENCE).astype(np.float32), sample_rate=16000),
                   None), "MediaError", 1),
    "decoded audio with infinity": (
        lambda t: (mmf.Audio(np.where(np.arange(16000) == 7, -np.inf, SILENCE).astype(np.float32),
                             sample_rate=16000), None), "MediaError", 1),
    "decoded int16 samples": (
        lambda t: (mmf.Audio(np.zeros(16000, np.int16), sample_rate=16000), None), "MediaError", 1),
    "decoded int32 samples": (
        lambda t: (mmf.Audio(np.zeros((16000, 2), np.int32), sample_rate=16000), None), "MediaError", 1),
    "decoded float64 samples": (lambda t: (mmf.Audio(np.zeros(16000), sample_rate=16000), None), "MediaError", 1),
    "int16 PCM values as float32": (
        lambda t: (mmf.Audio((tone(1.0, 16000)[:, 0] * 32767).round().astype(np.float32), sample_rate=16000), None),
        "accepted", None),
    "decoded samples channels first [2, N]": (
        lambda t: (mmf.Audio(np.zeros((2, 16000), np.float32), sample_rate=16000), None), "MediaError", 1),
    "decoded samples [N, 1, 1]": (
        lambda t: (mmf.Audio(np.zeros((16000, 1, 1), np.float32), sample_rate=16000), None), "MediaError", 1),
    "decoded audio of 0 samples": (
        lambda t: (mmf.Audio(np.zeros(0, np.float32), sample_rate=16000), None), "MediaError", 1),
    "decoded audio at 0 Hz": (lambda t: (mmf.Audio(SILENCE, sample_rate=0), None), "MediaError", 1),
    "decoded audio at 10 MHz": (lambda t: (mmf.Audio(SILENCE, sample_rate=10_000_000), None), "MediaError", 1),
    "decoded audio above the seconds limit": (
        lambda t: (mmf.Audio(np.zeros(1801 * 10, np.float32), sample_rate=10), None), "LimitExceededError", 1),
    "audio too short for a token": (lambda t: (mmf.Audio(SILENCE[:320], sample_rate=16000), None), "MediaError", 1),
}


# --- prompts ---------------------------------------------------------------------------------
def by_char(text: str) -> list[int]:
    """A tokenizer without the model's special tokens: every character an ordinary id."""
    return [1000 + ord(c) % 50 for c in text]


# id -> (request, tokenize or None, expected, item index)
PROMPT_CASES = {
    "text whose placeholder the tokenizer split": (
        mmf.MmInput(images=[GOOD], text="<|vision_start|><|image_pad|><|vision_end|>hi"), by_char, "LayoutError", None),
    "neither text nor input_ids": (mmf.MmInput(images=[GOOD]), None, "accepted", None),
}


# --- prompts expanded as text (smolvlm's video prose, Capabilities.text_prompts) ----------------
SMOL = "smolvlm2_500m_video_instruct"
TEXT_SPEC = ({**mmf.preset(SMOL), "video_token_id": 49280, "size_longest_edge": 96, "max_image_size": 32,
              "image_seq_len": 4} if SMOL in mmf.list_presets() else None)
TEXT_CLIP = mmf.VideoFrames(FRAMES, fps=10.0)
TEXT = "User: <video> what happens?"


class Chars:
    """A tokenizer giving character offsets: one id per character, ``<image>`` one special
    id; ``change`` rewrites its ``(ids, offsets)`` (a custom tokenizer's malformed answer)."""

    def __init__(self, change=None):
        self.change = change

    def encode_with_offsets(self, text):
        found = list(re.finditer(r"<image>|.", text, re.S))
        ids = [49190 if m.group() == "<image>" else 1000 + ord(m.group()) % 50 for m in found]
        offsets = [m.span() for m in found]
        return (ids, offsets) if self.change is None else self.change(ids, offsets)


def _down(ids, offsets):
    raise RuntimeError("tokenizer backend down")


def _text(videos: int = 1, text: str = TEXT) -> mmf.MmInput:
    return mmf.MmInput(videos=[TEXT_CLIP] * videos, text=text)


# id -> (request, tokenize, expected, item index)
TEXT_PROMPT_CASES = {
    "text prompt through a tokenizer giving offsets": (_text(), Chars(), "accepted", None),
    "text prompt: offsets going back": (_text(), Chars(lambda i, o: (i, o[::-1])), "InvalidInputError", None),
    "text prompt: offsets past the text's end": (
        _text(), Chars(lambda i, o: (i, [(a + 5, b + 5) for a, b in o])), "InvalidInputError", None),
    "text prompt: negative offsets": (
        _text(), Chars(lambda i, o: (i, [(a - 1, b) for a, b in o])), "InvalidInputError", None),
    "text prompt: one offset pair short": (_text(), Chars(lambda i, o: (i, o[:-1])), "InvalidInputError", None),
    "text prompt: offset pairs of unequal lengths": (
        _text(), Chars(lambda i, o: (i, [o[0], (1,), *o[2:]])), "InvalidInputError", None),
    "text prompt: float offsets": (
        _text(), Chars(lambda i, o: (i, [(a + 0.5, b) for a, b in o])), "InvalidInputError", None),
    "text prompt: tokenizer raising": (_text(), Chars(_down), "InvalidInputError", None),
    "text prompt: tokenizer without offsets": (_text(), lambda text: [1, 2, 3], "UnsupportedError", None),
    "text prompt: id outside the id range": (
        _text(), Chars(lambda i, o: ([-3, *i[1:]], o)), "InvalidInputError", None),
    "text prompt: offsets placing no token in the video's text": (
        _text(), Chars(lambda i, o: (i, [(0, 0)] * len(o))), "LayoutError", 0),
    "text prompt: more placeholders than videos": (
        _text(1, "<video> and <video>"), Chars(), "LayoutError", None),
    "text prompt: fewer placeholders than videos": (_text(2), Chars(), "LayoutError", None),
    "text prompt: token ids for a video expanded as text": (
        mmf.MmInput(videos=[TEXT_CLIP], input_ids=[7, 49280]), Chars(), "UnsupportedError", 0),
}


def video_ids(images: list, videos: list) -> list[int]:
    return [5] + [PAD, 6] * len(images) + [VPAD, 6] * len(videos)


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def reference(pipe):
    return pipe.process(mmf.MmInput(images=[GOOD], input_ids=[5, PAD, 6]))


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input(case, pipe, reference, tmp_path):
    build, expected, item = CASES[case]
    images, ids, limits = build(tmp_path)
    ids = ids if ids is not None else [5] + [PAD, 6] * len(images)
    p = pipe if limits is None else mmf.pipeline_from_spec(SPEC, limits=limits)
    check(case, p, mmf.MmInput(images=images, input_ids=ids), expected, item, pipe, reference, tmp_path)


@pytest.mark.parametrize("case", list(VIDEO_CASES))
def test_bad_video_input(case, pipe, reference, tmp_path):
    build, spec, expected, item = VIDEO_CASES[case]
    if spec is None:
        pytest.skip("needs the qwen3_vl preset")
    images, videos, ids, limits = build(tmp_path)
    ids = ids if ids is not None else video_ids(images, videos)
    p = pipe if spec is SPEC and limits is None else mmf.pipeline_from_spec(spec, limits=limits)
    if spec is QWEN3:
        ids = [{PAD: spec["image_token_id"], VPAD: spec["video_token_id"]}.get(i, i) for i in ids]
    check(case, p, mmf.MmInput(images=images, videos=videos, input_ids=ids), expected, item, pipe, reference, tmp_path)


@pytest.mark.parametrize("case", list(AUDIO_CASES))
def test_bad_audio_input(case, pipe, reference, tmp_path):
    source, item = AUDIO_CASES[case]
    request = mmf.MmInput(images=[GOOD], audios=[source], input_ids=[5, PAD, 6])
    check(case, pipe, request, "UnsupportedError", item, pipe, reference, tmp_path)


@pytest.fixture(scope="module")
def audio_pipe():
    pytest.importorskip("qwen2_audio_plugin")
    return mmf.pipeline_from_spec(mmf.preset("qwen2_audio"))


@pytest.fixture(scope="module")
def good_wav():
    return sf_bytes(wav)


@pytest.mark.parametrize("case", list(AUDIO_FAMILY_CASES))
def test_bad_audio_family_input(case, audio_pipe, good_wav, tmp_path):
    build, expected, item = AUDIO_FAMILY_CASES[case]
    source, limits = build(tmp_path)
    p = audio_pipe if limits is None else mmf.pipeline_from_spec(mmf.preset("qwen2_audio"), limits=limits)
    request = mmf.MmInput(audios=[good_wav, source], input_ids=[5, APAD, 6, APAD, 6])
    good = mmf.MmInput(audios=[good_wav], input_ids=[5, APAD, 6])
    check(case, p, request, expected, item, audio_pipe, audio_pipe.process(good), tmp_path, good=good)


@pytest.mark.parametrize("case", list(PROMPT_CASES))
def test_bad_prompt(case, pipe, reference, tmp_path):
    request, tokenize, expected, item = PROMPT_CASES[case]
    check(case, pipe, request, expected, item, pipe, reference, tmp_path, tokenize)


@pytest.fixture(scope="module")
def text_pipe():
    if TEXT_SPEC is None:
        pytest.skip("needs the smolvlm plugin (a family with Capabilities.text_prompts)")
    return mmf.pipeline_from_spec(TEXT_SPEC)


@pytest.mark.parametrize("case", list(TEXT_PROMPT_CASES))
def test_bad_text_prompt(case, text_pipe, tmp_path):
    request, tokenize, expected, item = TEXT_PROMPT_CASES[case]
    good = _text()
    reference = text_pipe.process(good, tokenize=Chars())
    check(case, text_pipe, request, expected, item, text_pipe, reference, tmp_path, tokenize, good=good,
          good_tokenize=Chars())


def documented_messages() -> dict[str, str]:
    """case -> the message its row of docs/bad-input.md shows."""
    rows = re.finditer(r"^\| ([^|]+?) \|.*\| `(.+)` \|$", DOCS.read_text(), re.M)
    # A table cell escapes "|" as "\\|".
    return {m.group(1): m.group(2).replace("\\|", "|") for m in rows}


def check(case, p, request, expected, item, pipe, reference, tmp, tokenize=None, good=None, good_tokenize=None):
    """``request`` on ``p`` ends as ``expected`` (at ``item``, with the message of its
    docs row, ``<dir>`` standing for ``tmp``), in time and memory, and the shared ``pipe``
    still gives ``reference`` for the ``good`` request (one image by default; through
    ``good_tokenize`` when it is text) afterwards."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        p.process(request, tokenize=tokenize)
        got, err = "accepted", None
    except mmf.MmError as e:
        got, err = type(e).__name__, e
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert got == expected, f"{case}: {got} {err}"
    if err is not None:
        assert err.item == item, f"{case}: item {err.item} != {item}: {err}"
        documented = documented_messages()[case].replace("<dir name>", tmp.name).replace("<dir>", str(tmp))
        assert str(err) == documented, f"{case}: the message differs from docs/bad-input.md"
    assert seconds < MAX_SECONDS, f"{case}: took {seconds:.2f}s"
    assert peak < MAX_ALLOC, f"{case}: allocated {peak / 2**20:.1f} MiB"
    after = pipe.process(good if good is not None else mmf.MmInput(images=[GOOD], input_ids=[5, PAD, 6]),
                         tokenize=good_tokenize)
    assert_same_output(reference, after, f"good request after {case!r}")


def test_docs_table_lists_every_case():
    text = DOCS.read_text()
    rows = {m.group(1) for m in re.finditer(r"^\| ([^|]+?) \|", text, re.M)}
    missing = [c for c in (*CASES, *VIDEO_CASES, *AUDIO_CASES, *AUDIO_FAMILY_CASES, *PROMPT_CASES,
                           *TEXT_PROMPT_CASES) if c not in rows]
    assert not missing, f"docs/bad-input.md lacks rows for {missing}"


# --- processor options -----------------------------------------------------------------------
# id -> (request, expected, item index); every item option is refused before any I/O.
OPTION_CASES = {
    "unknown image option": (mmf.MmInput([GOOD, mmf.Image(GOOD, colour=1)]), "SpecError", 1),
    "image max_pixels below one merged patch": (mmf.MmInput([GOOD, mmf.Image(GOOD, max_pixels=100)]), "SpecError", 1),
    "negative image min_pixels": (mmf.MmInput([GOOD, mmf.Image(GOOD, min_pixels=-1)]), "SpecError", 1),
    "option value that is no JSON value": (mmf.MmInput([GOOD, mmf.Image(GOOD, max_pixels={1})]), "SpecError", 1),
    "request option no modality takes": (mmf.MmInput([GOOD], options={"colour": 1}), "SpecError", None),
    "request option out of range": (mmf.MmInput([GOOD, GOOD], options={"min_pixels": 0}), "SpecError", 0),
    "request option out of range, one item overriding it": (
        mmf.MmInput([GOOD, mmf.Image(GOOD, max_pixels=SPEC["max_pixels"])], options={"max_pixels": 100}),
        "SpecError", 0),
    "unknown video option": (mmf.MmInput([GOOD], videos=[mmf.Video(FRAMES, colour=2.0)]), "SpecError", 1),
    "video fps without frame sampling": (mmf.MmInput([GOOD], videos=[mmf.Video(FRAMES, fps=2.0)]), "SpecError", 1),
    "video max_pixels below one merged patch": (
        mmf.MmInput([GOOD], videos=[mmf.Video(FRAMES, max_pixels=10)]), "SpecError", 1),
    "image option equal to the preset's value": (
        mmf.MmInput([GOOD, mmf.Image(GOOD, max_pixels=SPEC["max_pixels"])]), "accepted", None),
}


@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_bad_option(case, pipe, reference, tmp_path):
    request, expected, item = OPTION_CASES[case]
    check(case, pipe, request, expected, item, pipe, reference, tmp_path)


def test_docs_table_lists_every_option_case():
    rows = {m.group(1) for m in re.finditer(r"^\| ([^|]+?) \|", DOCS.read_text(), re.M)}
    assert not [c for c in OPTION_CASES if c not in rows]
