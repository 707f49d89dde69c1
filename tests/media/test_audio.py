"""media/audio.py: header probes without decoding, and decode + downmix + resample byte for
byte as ``transformers.audio_utils.load_audio(..., backend="soundfile")``."""

from __future__ import annotations

import io

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels
from mm_framework.media.audio import decode_audio, read_header, take_audio
from mm_framework.media.policy import ByteBudget

from .audio_helpers import FORMATS, encode, flac_claiming, tone, wav

sf = pytest.importorskip("soundfile")
pytest.importorskip("soxr")
LIMITS = mmf.Limits()


def _file(fmt: str, subtype: str, rate: int, channels: int, seconds: float = 1.3) -> bytes:
    return encode(tone(seconds, rate, channels, seed=channels), rate, fmt, subtype)


@pytest.mark.parametrize("fmt, subtype, rate", FORMATS)
@pytest.mark.parametrize("channels", [1, 2])
def test_the_header_is_read_without_decoding(fmt, subtype, rate, channels, monkeypatch):
    data = _file(fmt, subtype, rate, channels)
    info = sf.info(io.BytesIO(data))
    monkeypatch.setattr(sf.SoundFile, "read", lambda *a, **k: pytest.fail("the probe decoded samples"))
    header = read_header(data, LIMITS)
    assert header == mmf.plugin.AudioHeader(info.samplerate, info.channels, info.frames)
    assert header.channels == channels and header.duration == info.frames / info.samplerate


@pytest.mark.parametrize("fmt, subtype, rate", FORMATS)
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("to_rate", [16000, 24000, 8000])
def test_decode_and_resample_equal_load_audio(fmt, subtype, rate, channels, to_rate, tmp_path):
    from transformers.audio_utils import load_audio

    data = _file(fmt, subtype, rate, channels)
    path = tmp_path / f"a.{fmt.lower()}"
    path.write_bytes(data)
    want = load_audio(str(path), sampling_rate=to_rate, backend="soundfile")
    decoded = decode_audio(data, LIMITS)
    assert decoded.sample_rate == rate and decoded.channels == channels and decoded.samples.dtype == np.float32
    got = kernels.resample(decoded.samples, decoded.sample_rate, to_rate)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def test_a_long_multichannel_file_downmixes_block_by_block_as_the_reference(tmp_path):
    from transformers.audio_utils import load_audio

    data = encode(tone(9.0, 22050, 6), 22050, "WAV", "FLOAT")  # > one 65536-frame block
    path = tmp_path / "a.wav"
    path.write_bytes(data)
    want = load_audio(str(path), sampling_rate=22050, backend="soundfile")
    assert decode_audio(data, LIMITS).samples.tobytes() == want.tobytes()


@pytest.mark.parametrize("fmt, subtype, rate", FORMATS)
@pytest.mark.parametrize("channels", [1, 2])
def test_files_longer_than_a_read_block_equal_load_audio(fmt, subtype, rate, channels, tmp_path):
    # Several of our read blocks: libsndfile's MPEG decoder gives other last bits when a
    # stream is read in several calls, so MP3 is read in one, as the reference reads it.
    from transformers.audio_utils import load_audio

    data = _file(fmt, subtype, rate, channels, seconds=4.1)
    path = tmp_path / f"a.{fmt.lower()}"
    path.write_bytes(data)
    want = load_audio(str(path), sampling_rate=rate, backend="soundfile")
    assert decode_audio(data, LIMITS).samples.tobytes() == want.tobytes()


@pytest.mark.parametrize("fmt, subtype, rate", FORMATS)
def test_a_prefix_read_equals_the_whole_files_prefix(fmt, subtype, rate):
    data = _file(fmt, subtype, rate, 2, seconds=4.1)
    whole = decode_audio(data, LIMITS)
    for keep in (1, rate, 3 * rate + 17):
        cut = decode_audio(data, LIMITS, lambda header, keep=keep: keep)
        assert cut.header == whole.header and cut.total_frames == whole.header.frames
        assert cut.samples.tobytes() == whole.samples[:keep].tobytes()
    assert decode_audio(data, LIMITS, lambda header: None).total_frames is None
    assert decode_audio(data, LIMITS, lambda header: 10 * rate).samples.tobytes() == whole.samples.tobytes()


def test_decoded_arrays_downmix_as_a_decoded_file():
    stereo = tone(0.7, 44100, 2)
    taken = take_audio(mmf.Audio(stereo, sample_rate=44100), LIMITS, ByteBudget(1 << 30))
    from_file = decode_audio(encode(stereo, 44100, "WAV", "FLOAT"), LIMITS)
    assert taken.audio.samples.tobytes() == from_file.samples.tobytes()
    assert taken.header == read_header(encode(stereo, 44100, "WAV", "FLOAT"), LIMITS)
    assert taken.audio.header == taken.header
    stereo[0, 0] = 0.5  # the request took a copy
    assert taken.audio.samples.tobytes() == from_file.samples.tobytes()


def test_a_header_claiming_ten_hours_is_refused_before_any_sample():
    data = flac_claiming(10 * 3600 * 16000)
    with pytest.raises(mmf.LimitExceededError, match=r"^audio of 36000.00 s"):
        read_header(data, LIMITS)
    with pytest.raises(mmf.LimitExceededError, match=r"^audio of 36000.00 s"):
        decode_audio(data, LIMITS)
    assert read_header(data, mmf.Limits(max_audio_seconds=36000)).frames == 36000 * 16000


@pytest.mark.parametrize("data, error, match", [
    (b"\xff\xf1\x50\x80" + bytes(64), mmf.UnsupportedError, r"^audio: AAC \(ADTS\) is not supported"),
    (encode(tone(0.1, 16000), 16000, "AIFF", "PCM_16"), mmf.UnsupportedError, r"^audio: AIFF is not supported"),
    (b"", mmf.MediaError, r"^audio: not a readable audio file"),
    (wav(0.2)[:40], mmf.MediaError, r"^audio: not a readable audio file"),
])
def test_unsupported_and_unreadable_files_are_named(data, error, match):
    with pytest.raises(error, match=match):
        read_header(data, LIMITS)


@pytest.mark.parametrize("subtype", ["FLOAT", "DOUBLE"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_float_file_holding_nan_or_infinity_is_refused(subtype, bad):
    samples = tone(0.2, 16000, 2)
    samples[1234, 1] = bad
    with pytest.raises(mmf.MediaError, match=r"^audio: the decoded samples hold NaN or infinity$"):
        decode_audio(encode(samples, 16000, "WAV", subtype), LIMITS)


def test_a_truncated_stream_is_refused_not_shortened():
    data = _file("MP3", "MPEG_LAYER_III", 44100, 2)
    with pytest.raises(mmf.MediaError, match=r"^audio: (truncated stream|corrupt)"):
        decode_audio(data[: len(data) // 2], LIMITS)
    flac = _file("FLAC", "PCM_16", 16000, 1)
    with pytest.raises(mmf.MediaError, match=r"^audio: (truncated stream|corrupt)"):
        decode_audio(flac[: len(flac) // 2], LIMITS)


def test_resample_returns_the_input_at_the_same_rate_and_checks_rates():
    x = tone(0.1, 16000)[:, 0]
    assert kernels.resample(x, 16000, 16000) is x
    with pytest.raises(mmf.SpecError, match="to_rate must be greater than zero"):
        kernels.resample(x, 16000, 0)
