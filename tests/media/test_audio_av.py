"""media/audio_av.py: MP4/M4A and WebM/Matroska audio through PyAV (docs/audio.md, "Other
containers"). Lossless streams (ALAC, FLAC, PCM) decode byte for byte as ``load_audio`` decodes
the same PCM as a WAV; lossy ones (AAC, Opus, MP3) as PyAV's own decode of every frame, cut or
padded to the header's length, downmixed and resampled with load_audio's expressions."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels
from mm_framework.media.audio import decode_audio, read_header

from .audio_helpers import AV_LOSSLESS, AV_LOSSY, av_encode, encode, tone

av = pytest.importorskip("av")
soxr = pytest.importorskip("soxr")
pytest.importorskip("soundfile")
LIMITS = mmf.Limits()


def _reference(data: bytes, header: mmf.plugin.AudioHeader, to_rate: int) -> np.ndarray:
    """Every frame PyAV decodes from the first audio stream, float32 [channels, N], fitted to
    the header's length, then load_audio's downmix and soxr resampling."""
    import io

    with av.open(io.BytesIO(data)) as box:
        frames = [f.to_ndarray() for f in box.decode(box.streams.audio[0])]
    assert all(f.dtype == np.float32 for f in frames)  # the lossy decoders give fltp
    waveform = np.concatenate(frames, axis=1)
    waveform = np.pad(waveform, ((0, 0), (0, max(0, header.frames - waveform.shape[1]))))[:, :header.frames]
    if waveform.shape[0] > 1:
        waveform = waveform.mean(axis=0)
    else:
        waveform = waveform[0]
    if header.sample_rate == to_rate:
        return waveform
    out = soxr.resample(waveform, header.sample_rate, to_rate, quality="soxr_hq")
    n = math.ceil(header.frames * to_rate / header.sample_rate)
    return np.pad(out, (0, max(0, n - len(out))))[:n]


def _decoded_length(data: bytes) -> tuple[int, int]:
    """How many samples PyAV decodes, and its longest frame."""
    import io

    with av.open(io.BytesIO(data)) as box:
        sizes = [f.samples for f in box.decode(box.streams.audio[0])]
    return sum(sizes), max(sizes)


@pytest.mark.parametrize("fmt, codec, rate", AV_LOSSLESS)
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("to_rate", [16000, 24000])
def test_lossless_streams_equal_load_audio_on_the_same_pcm(fmt, codec, rate, channels, to_rate, tmp_path):
    from transformers.audio_utils import load_audio

    x = tone(1.3, rate, channels, seed=channels)
    pcm = np.round(x * 32767).astype(np.int16)  # what av_encode gives integer encoders
    path = tmp_path / "a.wav"
    path.write_bytes(encode(pcm, rate, "WAV", "PCM_16"))
    want = load_audio(str(path), sampling_rate=to_rate, backend="soundfile")
    data = av_encode(x, rate, fmt, codec)
    header = read_header(data, LIMITS)
    assert header == mmf.plugin.AudioHeader(rate, channels, len(x))
    decoded = decode_audio(data, LIMITS)
    assert decoded.header == header
    got = kernels.resample(decoded.samples, decoded.sample_rate, to_rate)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("fmt, codec, rate", AV_LOSSY)
@pytest.mark.parametrize("channels", [1, 2])
def test_lossy_streams_equal_pyav_decode_fitted_to_the_header(fmt, codec, rate, channels):
    data = av_encode(tone(1.3, rate, channels, seed=channels), rate, fmt, codec)
    header = read_header(data, LIMITS)
    assert (header.sample_rate, header.channels) == (rate, channels)
    decoded_n, longest = _decoded_length(data)
    # The rule: cut a longer decode, pad a shorter one by under one codec frame.
    assert abs(header.frames - decoded_n) <= longest
    decoded = decode_audio(data, LIMITS)
    assert decoded.header == header
    for to_rate in (16000, rate):
        got = kernels.resample(decoded.samples, decoded.sample_rate, to_rate)
        assert got.tobytes() == _reference(data, header, to_rate).astype(np.float32).tobytes()


@pytest.mark.parametrize("fmt, codec", [("mp4", "aac"), ("webm", "libopus"), ("mp4", "alac")])
def test_the_audio_track_of_a_video_clip(fmt, codec):
    rate = 48000 if codec == "libopus" else 16000
    x = tone(1.0, rate, 2)
    alone, with_video = av_encode(x, rate, fmt, codec), av_encode(x, rate, fmt, codec, video=True)
    assert read_header(with_video, LIMITS) == read_header(alone, LIMITS)
    assert decode_audio(with_video, LIMITS).samples.tobytes() == decode_audio(alone, LIMITS).samples.tobytes()


def test_the_seconds_limit_is_checked_from_the_header_before_decoding():
    data = bytearray(av_encode(tone(2.0, 16000), 16000, "matroska", "flac"))
    data[len(data) // 3:] = bytes(len(data) - len(data) // 3)  # the header intact, the frames zeroed
    short = mmf.Limits(max_audio_seconds=1)
    for call in (read_header, decode_audio):
        with pytest.raises(mmf.LimitExceededError, match=r"^audio of 2.00 s \(32000 frames at 16000 Hz\) is above "
                           r"Limits.max_audio_seconds = 1$"):
            call(bytes(data), short)
    assert read_header(bytes(data), LIMITS).frames == 32000
    with pytest.raises(mmf.MediaError, match=r"^audio: (truncated stream \(\d+ of the 32000 frames|corrupt 32000-frame "
                       r"WebM/Matroska stream)"):
        decode_audio(bytes(data), LIMITS)
    cut = av_encode(tone(2.0, 16000), 16000, "matroska", "flac")
    with pytest.raises(mmf.MediaError, match=r"^audio: truncated stream \(\d+ of the 32000 frames its header"):
        decode_audio(cut[: len(cut) // 2], LIMITS)


def test_bad_containers_are_named():
    clip = av_encode(tone(1.0, 16000), 16000, "mp4", "aac", video=True)
    with pytest.raises(mmf.MediaError, match=r"^audio: not a readable MP4/M4A file \("):
        read_header(clip[: len(clip) // 2], LIMITS)  # the index at the end, cut off
    with pytest.raises(mmf.MediaError, match=r"^audio: not a readable MP4/M4A file \("):
        read_header(b"\x00\x00\x00\x20ftypisom" + bytes(64), LIMITS)
    with pytest.raises(mmf.MediaError, match=r"^audio: not a readable WebM/Matroska file \("):
        read_header(b"\x1a\x45\xdf\xa3" + b"webm" + bytes(64), LIMITS)
    with pytest.raises(mmf.MediaError, match=r"^audio: no audio stream in the MP4/M4A file \(streams: video\)$"):
        read_header(_video_only(), LIMITS)
    with pytest.raises(mmf.UnsupportedError, match=r"^audio: AAC \(ADTS\) is not supported, its header holds no "
                       r"length"):
        read_header(av_encode(tone(0.5, 16000), 16000, "adts", "aac"), LIMITS)


def _video_only() -> bytes:
    import io

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream("mpeg4", rate=10)
        s.width, s.height, s.pix_fmt = 32, 24, "yuv420p"
        for _ in range(3):
            out.mux(s.encode(av.VideoFrame.from_ndarray(np.zeros((24, 32, 3), np.uint8), format="rgb24")))
        out.mux(s.encode())
    return buf.getvalue()


def test_without_pyav_the_extra_is_named(monkeypatch):
    data = av_encode(tone(0.5, 16000), 16000, "ipod", "aac")
    monkeypatch.setitem(sys.modules, "av", None)
    for call in (read_header, decode_audio):
        with pytest.raises(mmf.UnsupportedError, match=r"^audio: decoding MP4/M4A needs PyAV, which is not "
                           r"installed: pip install 'mm-framework\[video\]'$"):
            call(data, LIMITS)


def test_tags_that_are_not_utf8_are_ignored():
    x = tone(0.5, 16000)
    plain = av_encode(x, 16000, "ipod", "aac")
    latin1 = av_encode(x, 16000, "ipod", "aac", title="QQQQQQ").replace(b"QQQQQQ", b"\xff\xfe\x8d\xefab")
    assert decode_audio(latin1, LIMITS).samples.tobytes() == decode_audio(plain, LIMITS).samples.tobytes()
