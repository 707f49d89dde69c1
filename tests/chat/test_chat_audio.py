"""Audio through the chat front door (the qwen2_audio chat test model): OpenAI ``input_audio``
parts, ``audio_url`` parts and transformers' ``audio`` items give the same request; every
rejection, with its exact message naming the message and part. Parity with transformers on
``audio`` items is ``test_chat_models.py``'s."""

from __future__ import annotations

import base64

import numpy as np
import pytest

import mm_framework as mmf
from .models import qwen2_audio

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

AUDIO_ID = 151646


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    return mmf.Processor.from_model_dir(qwen2_audio.make_dir(tmp_path_factory.mktemp("qwen2_audio") / "model"))


@pytest.fixture(scope="module")
def clip():
    return qwen2_audio._clips().make("tone_44k1_stereo_2s.wav")


def user(*parts):
    return [{"role": "user", "content": [*parts, {"type": "text", "text": "What is it?"}]}]


def rejects(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert str(e.value) == message
    return e.value


def test_input_audio_is_the_audio_item(proc, clip):
    b64 = base64.b64encode(clip).decode()
    want = proc.apply_chat_template(user({"type": "audio", "audio": b64}))
    for fmt in ("wav", "mp3"):  # the format is checked, not used: the decoder reads the container
        part = {"type": "input_audio", "input_audio": {"data": b64, "format": fmt}}
        assert proc.render(user(part)) == proc.render(user({"type": "audio", "audio": b64}))
        got = proc.apply_chat_template(user(part))
        assert got == want and int(np.count_nonzero(got.input_ids == AUDIO_ID)) == 50
    assert "Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\nWhat is it?" in proc.render(user(part))


def test_audio_url_parts(proc, clip):
    url = "data:audio/wav;base64," + base64.b64encode(clip).decode()
    want = proc.apply_chat_template(user({"type": "audio", "audio": url}))
    for part in ({"type": "audio_url", "audio_url": {"url": url}}, {"type": "audio_url", "audio_url": url}):
        assert proc.apply_chat_template(user(part)) == want
        assert proc.count_tokens(user(part)).input_ids.tolist() == want.input_ids.tolist()


def test_audio_parts_the_template_does_not_place(proc, clip):
    # The published template places parts holding an 'audio' or 'audio_url' key only.
    rejects(lambda: proc.apply_chat_template(user({"type": "audio", "path": "/clips/a.wav"})), mmf.LayoutError,
            "the chat template wrote 0 '<|AUDIO|>' placeholder(s) for 1 audio item(s) in the messages")


@pytest.mark.parametrize(("part", "error", "message"), [
    ({"type": "input_audio"}, mmf.InvalidInputError,
     'message 0 part 0: an input_audio part needs input_audio: {"data": ..., "format": ...}'),
    ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "aac"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.format must be one of wav, mp3, flac, ogg, opus, got 'aac'"),
    ({"type": "input_audio", "input_audio": {"data": "AAAA"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.format must be one of wav, mp3, flac, ogg, opus, got None"),
    ({"type": "input_audio", "input_audio": {"data": 5, "format": "wav"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.data must be base64 text, got int"),
    ({"type": "input_audio", "input_audio": {"data": "%%%", "format": "wav"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.data is not valid base64 text"),
    ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav", "rate": 8000}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio takes data and format, got 'rate'"),
    ({"type": "input_audio", "input_audio": {"format": "wav"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio has no data"),
    ({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio has no data"),
    ({"type": "input_audio", "input_audio": {"data": "AAAA\nAAAA", "format": "wav"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.data is not valid base64 text"),
    ({"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.data is not valid base64 text"),
    ({"type": "input_audio", "input_audio": "AAAA"}, mmf.InvalidInputError,
     'message 0 part 0: an input_audio part needs input_audio: {"data": ..., "format": ...}'),
    ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "WAV"}}, mmf.InvalidInputError,
     "message 0 part 0: input_audio.format must be one of wav, mp3, flac, ogg, opus, got 'WAV'"),
    ({"type": "audio_url", "audio_url": {}}, mmf.InvalidInputError, "message 0 part 0: audio_url has no url"),
    ({"type": "audio_url", "audio_url": {"url": ""}}, mmf.InvalidInputError, "message 0 part 0: audio_url has no url"),
    ({"type": "audio_url", "audio_url": {"url": 3}}, mmf.InvalidInputError,
     "message 0 part 0: audio_url.url must be a string"),
    ({"type": "audio_url"}, mmf.InvalidInputError, 'message 0 part 0: a audio_url part needs audio_url: {"url": ...}'),
    ({"type": "audio_url", "audio_url": 5}, mmf.InvalidInputError,
     'message 0 part 0: a audio_url part needs audio_url: {"url": ...}'),
    ({"type": "audio", "audio": "data:audio/wav;base64,AAAA", "path": "/a.wav"}, mmf.InvalidInputError,
     "message 0 part 0: the audio part needs exactly one of audio, url, path (got audio, path)"),
    ({"type": "audio"}, mmf.InvalidInputError,
     "message 0 part 0: the audio part needs exactly one of audio, url, path (got none)"),
    ({"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}}, mmf.UnsupportedError,
     "message 0 part 0: this model takes no image (image_url part)"),
    ({"type": "video", "video": "https://x.invalid/a.mp4"}, mmf.UnsupportedError,
     "message 0 part 0: this model takes no video (video part)"),
])
def test_bad_audio_parts(proc, part, error, message):
    rejects(lambda: proc.apply_chat_template(user(part)), error, message)


def test_item_errors_name_the_message_part(proc, clip):
    b64 = base64.b64encode(clip).decode()
    e = rejects(lambda: proc.apply_chat_template(user({"type": "input_audio", "sampling_rate": 16000,
                                                         "input_audio": {"data": b64, "format": "wav"}})),
                mmf.SpecError, "item 0: message 0 part 0: processor option 'sampling_rate' is not one family "
                "'qwen2_audio' takes for audio items; it takes: none")
    assert e.item == 0
    tiny = base64.b64encode(qwen2_audio._clips().make("tiny_16k_mono_10ms.wav")).decode()
    messages = user({"type": "audio", "audio": b64}) + user({"type": "audio", "audio": tiny})
    e = rejects(lambda: proc.count_tokens(messages), mmf.MediaError,
                "item 1: message 1 part 0: audio of 160 samples at 16000 Hz gives no <|AUDIO|> token (at least 321 "
                "samples are needed; Qwen2AudioProcessor would drop the clip from the prompt)")
    assert e.item == 1



def _input_audio(data: bytes, fmt: str) -> dict:
    return {"type": "input_audio", "input_audio": {"data": base64.b64encode(data).decode(), "format": fmt}}


def _half_flac() -> bytes:
    from tests.media.audio_helpers import encode, tone

    flac = encode(tone(1.0, 16000), 16000, "FLAC", "PCM_16")
    return flac[: len(flac) // 2]


@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda: _input_audio(b"junk" * 20, "wav"), mmf.MediaError,
     "item 0: message 0 part 0: audio: not a readable audio file (Format not recognised.)"),
    (lambda: _input_audio(_half_flac(), "flac"), mmf.MediaError,
     "item 0: message 0 part 0: audio: corrupt 16000-frame FLAC stream (Error : flac decoder lost sync.)"),
    (lambda: {"type": "audio_url", "audio_url": "data:audio/wav;base64,%%%"}, mmf.MediaError,
     "item 0 (data:audio/wav;base64,...): message 0 part 0: media fetch: base64 decode: invalid symbol '%' at "
     "offset 0"),
    (lambda: {"type": "audio_url", "audio_url": {"url": "file:///nonexistent/a.wav"}}, mmf.FetchError,
     "item 0 (a.wav): message 0 part 0: media fetch: file:///nonexistent/a.wav: No such file or directory"),
    (lambda: {"type": "audio", "audio": 5}, mmf.InvalidInputError,
     "item 0: message 0 part 0: unsupported audio source type int; expected bytes, str, a pathlib.Path, "
     "mm_framework.Audio (float32 samples with their sample_rate)"),
])
def test_bad_audio_items_name_the_message_part(proc, make, error, message):
    assert rejects(lambda: proc.apply_chat_template(user(make())), error, message).item == 0
