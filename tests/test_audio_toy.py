"""Audio, the built-in third modality, end to end through a toy family defined here:
every source form, item numbering, counts from the header, the hash domain of decoded
samples, the limits, the feature cache and a family that does not take audio."""

from __future__ import annotations

import base64
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp
from mm_framework import plugins

from .conftest import png_bytes
from .media.audio_helpers import flac_claiming, tone, wav, wav_at_rate

pytest.importorskip("soundfile")
pytest.importorskip("soxr")

AUD_ID, IMG_ID = 5, 9
RATE, CHUNK_S, HOP = 16000, 2, 160
MEL = kernels.WhisperMel(n_mels=80, sampling_rate=RATE, chunk_length=CHUNK_S)


def _tokens(frames_at_rate: int) -> int:
    """Four mel frames a token, as Whisper-style encoders pool them."""
    return -(-MEL.num_valid_frames(frames_at_rate) // 4)


class ToyAudioFamily:
    """Whisper features at 16 kHz of a 2 s chunk; images are one token."""

    calls = 0

    def __init__(self, params):
        pass

    @mmp.hookimpl
    def mm_capabilities(self):
        return mmp.Capabilities(
            modalities=("image", "audio"), placeholders={"image": IMG_ID, "audio": AUD_ID},
            outputs={"audio": mmp.ItemOutputs("f32", {"mask": ("i64", (MEL.num_frames,))}),
                     "image": mmp.ItemOutputs("f32", {"mask": ("i64", (1,))})},
        )

    @mmp.hookimpl
    def mm_plan_item(self, header):
        if isinstance(header, mmp.AudioHeader):
            n = -(-header.frames * RATE // header.sample_rate)  # resample's ceil(n * to / from)
            return mmp.ItemPlan(mmf.Grid(1, 1, _tokens(n)), None)
        return mmp.ItemPlan(mmf.Grid(1, 1, 1), (header.width, header.height))

    @mmp.hookimpl
    def mm_process_item(self, media):
        type(self).calls += 1
        if isinstance(media, mmp.DecodedAudio):
            samples = kernels.resample(media.samples, media.sample_rate, RATE)
            return mmp.ProcessedItem(mmp.Tensor.f32(MEL(samples).T), {"mask": mmp.Tensor.i64(MEL.mask(len(samples)))},
                                     mmf.Grid(1, 1, _tokens(len(samples))))
        mean = media.rgb.reshape(-1, 3).mean(axis=0, keepdims=True).astype(np.float32)
        return mmp.ProcessedItem(mmp.Tensor.f32(mean), {"mask": mmp.Tensor.i64([1])}, mmf.Grid(1, 1, 1),
                                 size=(media.width, media.height))

    @mmp.hookimpl
    def mm_layout(self, input_ids, geometries, modalities):
        marks = {"image": IMG_ID, "audio": AUD_ID}
        return mmp.layout_by_placeholders(input_ids, marks, modalities,
                                          lambda i: mmp.Repeat(marks[modalities[i]], geometries[i].w))


class ToyAudioPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toyaudio", ToyAudioFamily)


@pytest.fixture
def toyaudio():
    name = plugins.register(ToyAudioPlugin(), name="toy-audio-family")
    try:
        yield
    finally:
        plugins.unregister(name)


@pytest.fixture
def pipe(toyaudio):
    return mmf.pipeline_from_spec({"family": "toyaudio"})


@pytest.fixture(scope="module")
def server():
    body = wav(0.5, 22050, 2)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/a.wav", body
    httpd.shutdown()
    httpd.server_close()


def _expected(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    from transformers.audio_utils import load_audio

    samples = load_audio(base64.b64encode(data).decode(), sampling_rate=RATE, backend="soundfile")
    return MEL(samples).T, MEL.mask(len(samples))


def test_every_source_form_gives_the_reference_features(pipe, server, tmp_path, monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    url, data = server
    path = tmp_path / "a.wav"
    path.write_bytes(data)
    features, mask = _expected(data)
    b64 = base64.b64encode(data).decode()
    forms = [data, bytearray(data), memoryview(data), f"data:audio/wav;base64,{b64}", b64, str(path), path,
             path.as_uri(), url]
    for form in forms:
        out = pipe.process(mmf.MmInput(audios=[form], input_ids=[AUD_ID]))
        item = out.items[0]
        assert item.modality == "audio" and item.hash == mmf.content_hash(data), form
        assert np.array_equal(item.feature.array, features) and np.array_equal(item.aux["mask"].array, mask)
        assert item.size is None and item.frames is None
    by_item = pipe.process(mmf.MmInput(items=[mmf.Item("audio", data)], input_ids=[AUD_ID]))
    assert by_item == pipe.process(mmf.MmInput(audios=[data], input_ids=[AUD_ID]))


def test_items_are_numbered_images_then_audios_and_counts_come_from_the_header(pipe, monkeypatch):
    a, b = wav(0.3, 8000), wav(1.7, 48000, 2)
    inp = mmf.MmInput(audios=[a, b], images=[png_bytes(8, 6)], input_ids=[AUD_ID, 0, IMG_ID, AUD_ID])
    out = pipe.process(inp)
    assert [it.modality for it in out.items] == ["audio", "image", "audio"]
    n0, n2 = _tokens(int(0.3 * RATE)), _tokens(int(1.7 * RATE))
    assert [it.geometry.w for it in out.items] == [n0, 1, n2]
    import soundfile

    def no_decode(*args, **kwargs):
        raise AssertionError("a count decoded samples")

    monkeypatch.setattr(soundfile.SoundFile, "read", no_decode)
    counted = pipe.count_tokens(inp)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets
    assert [it.geometry for it in counted.items] == [it.geometry for it in out.items]


def test_decoded_audio_hashes_in_its_own_domain_and_matches_the_file(pipe):
    stereo = tone(0.5, RATE, 2)
    out = pipe.process(mmf.MmInput(audios=[mmf.Audio(stereo, sample_rate=RATE)], input_ids=[AUD_ID]))
    samples = stereo.T.mean(axis=0)  # load_audio's downmix
    assert np.array_equal(out.items[0].feature.array, MEL(samples).T)
    assert out.items[0].hash not in (mmf.content_hash(stereo.tobytes()), mmf.content_hash(samples.tobytes()))
    other_rate = pipe.process(mmf.MmInput(audios=[mmf.Audio(stereo, sample_rate=RATE * 2)], input_ids=[AUD_ID]))
    assert other_rate.items[0].hash != out.items[0].hash
    mono = tone(0.5, 22050)[:, 0]
    out = pipe.process(mmf.MmInput(audios=[mmf.Audio(mono, sample_rate=22050)], input_ids=[AUD_ID]))
    assert np.array_equal(out.items[0].feature.array, MEL(kernels.resample(mono, 22050, RATE)).T)


@pytest.mark.parametrize("make, error, match", [
    (lambda: flac_claiming(10 * 3600 * RATE), mmf.LimitExceededError,
     r"^item 0: audio of 36000.00 s \(576000000 frames at 16000 Hz\) is above Limits.max_audio_seconds = 1800$"),
    (lambda: wav(0.0), mmf.MediaError, r"^item 0: audio frames must be greater than zero, got 0$"),
    (lambda: wav_at_rate(10_000_000), mmf.MediaError, r"^item 0: audio sample rate must be <= 384000, got 10000000$"),
    (lambda: wav_at_rate(0), mmf.MediaError, r"^item 0: audio: not a readable audio file \(.*\)$"),
    (lambda: wav(0.01, RATE, 64), mmf.MediaError, r"^item 0: audio channels must be <= 8, got 64$"),
    (lambda: b"\xff\xf1\x50\x80" + bytes(64), mmf.UnsupportedError,
     r"^item 0: audio: AAC \(ADTS\) is not supported, its header holds no length \(WAV, FLAC, OGG/Vorbis, Opus and "
     r"MP3 are, and MP4/M4A and WebM/Matroska through PyAV\)$"),
    (lambda: b"not audio at all" * 8, mmf.MediaError, r"^item 0: audio: not a readable audio file \(Format not rec"),
    (lambda: mmf.Audio(np.array([0.0, np.nan], np.float32), sample_rate=RATE), mmf.MediaError,
     r"^item 0: decoded audio: the samples hold NaN or infinity$"),
    (lambda: mmf.Audio(np.array([0.0, np.inf], np.float32), sample_rate=RATE), mmf.MediaError, "NaN or infinity"),
    (lambda: mmf.Audio(np.arange(100, dtype=np.int16), sample_rate=RATE), mmf.MediaError,
     r"^item 0: decoded audio: expected a float32 array \[N\] or \[N, channels\], got int16 \(100,\)$"),
    (lambda: mmf.Audio(np.zeros(100), sample_rate=RATE), mmf.MediaError, "got float64"),
    (lambda: mmf.Audio(np.zeros(100, np.float32), sample_rate=0), mmf.MediaError, "sample rate must be greater"),
    (lambda: mmf.Audio(np.zeros(1801 * 10, np.float32), sample_rate=10), mmf.LimitExceededError,
     "max_audio_seconds"),
])
def test_bad_audio_is_refused_naming_the_item(pipe, make, error, match):
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(error, match=match):
            run(mmf.MmInput(audios=[make()], input_ids=[AUD_ID]))


def test_the_seconds_limit_is_checked_from_the_header_before_decoding(toyaudio, monkeypatch):
    short = mmf.pipeline_from_spec({"family": "toyaudio"}, limits=mmf.Limits(max_audio_seconds=1))
    import soundfile

    monkeypatch.setattr(soundfile.SoundFile, "read", lambda *a, **k: pytest.fail("decoded past the limit"))
    with pytest.raises(mmf.LimitExceededError, match=r"^item 0: audio of 1.50 s .* Limits.max_audio_seconds = 1$"):
        short.process(mmf.MmInput(audios=[wav(1.5)], input_ids=[AUD_ID]))


def test_arrays_without_a_rate_are_refused_at_the_request(pipe):
    with pytest.raises(mmf.InvalidInputError, match=r"^item 0: unsupported audio source type ndarray; expected "
                       r"bytes, str, a pathlib.Path, mm_framework.Audio"):
        mmf.MmInput(audios=[np.zeros(10, np.float32)])


def test_samples_are_counted_against_the_request_byte_budget(toyaudio):
    small = mmf.pipeline_from_spec({"family": "toyaudio"}, limits=mmf.Limits(max_request_bytes=4 * RATE))
    one_s = mmf.Audio(np.zeros(RATE, np.float32), sample_rate=RATE)
    small.process(mmf.MmInput(audios=[one_s], input_ids=[AUD_ID]))
    with pytest.raises(mmf.LimitExceededError, match="exceeds the request media byte budget"):
        small.process(mmf.MmInput(audios=[one_s, one_s], input_ids=[AUD_ID, AUD_ID]))


def test_the_feature_cache_keys_audio_by_content(toyaudio):
    cached = mmf.pipeline_from_spec({"family": "toyaudio"}, cache=mmf.FeatureCache(max_bytes=1 << 24))
    data = wav(0.4)
    before = ToyAudioFamily.calls
    first = cached.process(mmf.MmInput(audios=[data], input_ids=[AUD_ID]))
    again = cached.process(mmf.MmInput(audios=[data], input_ids=[AUD_ID]))
    assert first == again and ToyAudioFamily.calls == before + 1 and again.timings.items[0].cached


def test_a_family_without_audio_refuses_it_before_io(toy):
    image_only = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1})
    with pytest.raises(mmf.UnsupportedError, match=r"^item 0 \(https://x.invalid/a.wav\): family 'toy' does not take "
                       r"audio$"):
        image_only.process(mmf.MmInput(audios=["https://x.invalid/a.wav"], input_ids=[1]))


@pytest.mark.parametrize(("seconds", "rate"), [(0.3, 8000), (1.0, 16000), (1.7, 48000), (2.5, 22050)])
def test_a_length_in_seconds_counts_what_a_file_of_that_length_gets(pipe, seconds, rate):
    out = pipe.process(mmf.MmInput(audios=[wav(seconds, rate)], input_ids=[AUD_ID]))
    (start, end), = out.offsets
    assert pipe.num_media_tokens(seconds=seconds, sample_rate=rate) == end - start + 1
    assert pipe.plan_item(seconds=seconds, sample_rate=rate).geometry == out.items[0].geometry


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"seconds": 0}, mmf.InvalidInputError, r"^seconds must be a positive finite number, got 0$"),
    ({"seconds": float("inf")}, mmf.InvalidInputError, r"^seconds must be a positive finite number, got inf$"),
    ({"seconds": "1"}, mmf.InvalidInputError, r"^seconds must be a positive finite number, got '1'$"),
    ({"seconds": 1e-9}, mmf.InvalidInputError, r"^1e-09 seconds at 16000 Hz is less than one sample$"),
    ({"seconds": 1, "width": 4}, mmf.InvalidInputError, r"^seconds describe an audio item: give no width"),
    ({"seconds": 1, "sample_rate": 0}, mmf.InvalidInputError, r"^sample_rate must be greater than zero, got 0$"),
    ({"seconds": 1, "sample_rate": 10_000_000}, mmf.InvalidInputError,
     r"^sample_rate must be <= 384000, got 10000000$"),
    ({"seconds": 3600}, mmf.LimitExceededError, r"^audio of 3600.00 s \(57600000 frames at 16000 Hz\) is above "
                                                r"Limits.max_audio_seconds = 1800$"),
    ({}, mmf.InvalidInputError, r"^a token count needs an image's width and height, or seconds for audio$"),
])
def test_bad_lengths_are_refused(pipe, kwargs, error, match):
    for ask in (pipe.num_media_tokens, pipe.plan_item):
        with pytest.raises(error, match=match):
            ask(**kwargs)


def test_a_length_for_a_family_without_audio_is_refused(toy):
    image_only = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1})
    with pytest.raises(mmf.UnsupportedError, match=r"^family 'toy' does not take audio: seconds describe an audio "
                       r"item$"):
        image_only.num_media_tokens(seconds=1)


def test_the_command_line_processes_audio_files_and_counts_seconds(toyaudio, tmp_path, capsys):
    import json

    from mm_framework import cli

    path = tmp_path / "a.wav"
    path.write_bytes(wav(0.5, 22050, 2))
    spec = '{"family": "toyaudio"}'
    assert cli.main(["process", "--audio", str(path), "--spec", spec, "--json", "--out", str(tmp_path / "o")]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = mmf.pipeline_from_spec({"family": "toyaudio"}).process(mmf.MmInput(audios=[path], input_ids=[AUD_ID]))
    item, = doc["items"]
    assert item["modality"] == "audio" and item["source"] == str(path) and item["size"] is None
    assert item["tokens"] == len(want.input_ids) and item["feature"] == {"dtype": "f32", "shape": [200, 80]}
    saved = np.load(tmp_path / "o.npz")
    assert saved["item0_feature"].tobytes() == want.items[0].feature.array.tobytes()
    assert cli.main(["process", "--audio", str(path), "--spec", spec]) == 0
    assert f"item 0: audio {path}  Grid(t=1, h=1, w=13)  tokens 13 at [0, 12]" in capsys.readouterr().out
    assert cli.main(["tokens", "--seconds", "1.5", "--rate", "44100", "--spec", spec, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {"tokens": mmf.pipeline_from_spec({"family": "toyaudio"}).num_media_tokens(seconds=1.5),
                   "family": "toyaudio", "modality": "audio", "seconds": 1.5, "sample_rate": 44100,
                   "geometry": "Grid(t=1, h=1, w=38)", "processed_size": None}
    assert cli.main(["tokens", "--seconds", "0", "--spec", spec]) == 2
    assert "error: InvalidInputError: seconds must be a positive finite number, got 0.0" in capsys.readouterr().err


@pytest.fixture
def reading(toyaudio):
    """A ``toyaudio`` pipeline whose family also implements ``mm_audio_frames`` (set
    ``reads.frames``), and the decoded items its ``mm_process_item`` saw."""
    reads = types.SimpleNamespace(frames=None, seen=[])

    class Family(ToyAudioFamily):
        @mmp.hookimpl
        def mm_audio_frames(self, header):
            if isinstance(reads.frames, Exception):
                raise reads.frames
            return reads.frames

        @mmp.hookimpl
        def mm_process_item(self, media):
            reads.seen.append(media)
            return super().mm_process_item(media)

    class Plugin:
        @mmp.hookimpl
        def mm_register_families(self, register):
            register("toyaudio_reads", Family)

    name = plugins.register(Plugin(), name="toy-audio-reads")
    try:
        yield reads, mmf.pipeline_from_spec({"family": "toyaudio_reads"})
    finally:
        plugins.unregister(name)


@pytest.mark.parametrize("fmt,subtype,rate", [("WAV", "PCM_16", 16000), ("FLAC", "PCM_24", 48000),
                                             ("MP3", "MPEG_LAYER_III", 44100), ("OGG", "VORBIS", 22050)])
def test_a_family_reading_a_prefix_gets_only_those_frames_and_the_whole_length(reading, fmt, subtype, rate):
    from .media.audio_helpers import encode

    reads, pipe = reading
    data = encode(tone(3.0, rate, 2), rate, fmt, subtype)
    whole = mmf.pipeline_from_spec({"family": "toyaudio"}).decode(mmf.MmInput(audios=[data]))[1][0]
    reads.frames = rate  # one second
    out = pipe.process(mmf.MmInput(audios=[data]))
    media = reads.seen[-1]
    assert media.header == whole.header and media.total_frames == whole.header.frames
    assert media.samples.tobytes() == whole.samples[:rate].tobytes()
    assert out.items[0].feature.array.tobytes() == pipe.process(mmf.MmInput(audios=[mmf.Audio(
        np.array(whole.samples[:rate]), sample_rate=rate)])).items[0].feature.array.tobytes()
    reads.frames = 10 * rate  # past the end: the whole clip, reported as such
    pipe.process(mmf.MmInput(audios=[data]))
    assert reads.seen[-1].total_frames is None and reads.seen[-1].samples.tobytes() == whole.samples.tobytes()


def test_a_prefix_of_decoded_samples_is_not_cut(reading):
    # Samples given as an array are already in memory: the hook is not asked.
    reads, pipe = reading
    reads.frames = 10
    pipe.process(mmf.MmInput(audios=[mmf.Audio(tone(0.5, RATE)[:, 0], sample_rate=RATE)]))
    assert len(reads.seen[-1].samples) == RATE // 2 and reads.seen[-1].total_frames is None


@pytest.mark.parametrize("frames,error,match", [
    (0, mmf.InternalError, "mm_audio_frames returned 0, not a positive int"),
    (1.5, mmf.InternalError, "mm_audio_frames returned 1.5"),
    (True, mmf.InternalError, "mm_audio_frames returned True"),
    (mmf.MediaError("too long for this model"), mmf.MediaError, "too long for this model"),
    (ValueError("boom"), mmf.InternalError, "ValueError in mm_audio_frames: boom"),
])
def test_a_bad_audio_frames_hook_is_refused_naming_the_item(reading, frames, error, match):
    reads, pipe = reading
    reads.frames = frames
    with pytest.raises(error, match=match) as e:
        pipe.process(mmf.MmInput(audios=[wav(0.5)]))
    assert e.value.item == 0
