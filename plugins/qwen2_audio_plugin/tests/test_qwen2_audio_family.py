"""The qwen2_audio family's own behaviour: what it refuses (other modalities, clips too
short for a token, prompts whose placeholders do not match) with the exact messages, the
truncation of long clips, decoded samples, counts without decoding, and the model kwargs."""

from __future__ import annotations

import io

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels
from mm_framework.plugin import whisper
from qwen2_audio_plugin import Qwen2AudioFamily

from . import qwen2_audio_clips

audio_tokens = whisper.encoder_tokens

soundfile = pytest.importorskip("soundfile")
pytest.importorskip("soxr")

AUDIO, BOS, EOS = 151646, 151647, 151648


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(mmf.preset("qwen2_audio"))


def wav(samples: np.ndarray, rate: int) -> bytes:
    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format="WAV", subtype="FLOAT")
    return buf.getvalue()


def test_capabilities_name_the_placeholder_and_its_text(pipe):
    caps = pipe.capabilities
    assert caps.modalities == ("audio",)
    assert caps.placeholders == {"audio": AUDIO} and caps.placeholder_texts == {"audio": "<|AUDIO|>"}
    assert dict(caps.outputs["audio"].aux) == {"feature_attention_mask": ("i64", (3000,))}


@pytest.mark.parametrize("kind, keyword", [("image", "images"), ("video", "videos")])
def test_other_modalities_are_refused_before_io(pipe, kind, keyword):
    with pytest.raises(mmf.UnsupportedError,
                       match=rf"^item 0 \(https://x.invalid/a\): family 'qwen2_audio' does not take {kind}$"):
        pipe.process(mmf.MmInput(**{keyword: ["https://x.invalid/a"]}, input_ids=[AUDIO]))


def test_an_image_beside_audio_is_refused_naming_it(pipe):
    clip = qwen2_audio_clips.make("short_8k_mono_0s4.wav")
    # Items are numbered images first, then audios: the image is item 0.
    with pytest.raises(mmf.UnsupportedError, match=r"^item 0 \(https://x.invalid/b.png\): family 'qwen2_audio' "
                       r"does not take image$"):
        pipe.process(mmf.MmInput(items=[mmf.Item("audio", clip), mmf.Item("image", "https://x.invalid/b.png")],
                                 input_ids=[AUDIO]))


@pytest.mark.parametrize("seconds, rate, samples", [(0.01, 16000, 160), (0.02, 16000, 320), (0.007, 44100, 113)])
def test_clips_too_short_for_a_token_are_refused(pipe, seconds, rate, samples):
    data = wav(np.full(round(seconds * rate), 0.1, np.float32), rate)
    match = (rf"^item 0: audio of {samples} samples at 16000 Hz gives no <\|AUDIO\|> token \(at least 321 samples "
             r"are needed; Qwen2AudioProcessor would drop the clip from the prompt\)$")
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(mmf.MediaError, match=match):
            run(mmf.MmInput(audios=[data], input_ids=[AUDIO]))


def test_the_shortest_clip_with_a_token(pipe):
    out = pipe.process(mmf.MmInput(audios=[wav(np.full(321, 0.1, np.float32), 16000)], input_ids=[BOS, AUDIO, EOS]))
    assert out.input_ids.tolist() == [BOS, AUDIO, EOS] and out.items[0].geometry.frames == 3


def test_token_formula():
    # Qwen2AudioProcessor: (((l - 1) // 2 + 1) - 2) // 2 + 1 for l valid mel frames.
    assert [audio_tokens(n) for n in (1, 2, 3, 4, 5, 6, 7, 250, 2999, 3000)] == [0, 0, 1, 1, 1, 1, 2, 62, 750, 750]


@pytest.mark.parametrize("ids, match", [
    ([1, 2], r"^prompt has 0 media placeholder\(s\) but 1 media item\(s\) \(placeholder id 151646\)$"),
    ([AUDIO, 1, AUDIO], r"^prompt has 2 media placeholder\(s\) but 1 media item\(s\) \(placeholder id 151646\)$"),
])
def test_placeholder_mismatch_is_refused(pipe, ids, match):
    with pytest.raises(mmf.LayoutError, match=match):
        pipe.process(mmf.MmInput(audios=[qwen2_audio_clips.make("short_8k_mono_0s4.wav")], input_ids=ids))


def test_markers_stay_prompt_text(pipe):
    out = pipe.process(mmf.MmInput(audios=[qwen2_audio_clips.make("short_8k_mono_0s4.wav")],
                                   input_ids=[9, BOS, AUDIO, EOS, 9]))
    assert out.input_ids.tolist() == [9, BOS] + [AUDIO] * 10 + [EOS, 9] and out.offsets == ((2, 11),)
    assert out.positions == mmf.Rope1D()


def test_long_clips_are_truncated_to_one_chunk(pipe):
    long = qwen2_audio_clips.samples("long_16k_mono_37s.flac")[:, 0]
    out = pipe.process(mmf.MmInput(audios=[mmf.Audio(long, sample_rate=16000)], input_ids=[AUDIO]))
    head = pipe.process(mmf.MmInput(audios=[mmf.Audio(long[:480000].copy(), sample_rate=16000)], input_ids=[AUDIO]))
    assert out.items[0].feature == head.items[0].feature and out.items[0].aux == head.items[0].aux
    assert int(out.items[0].aux["feature_attention_mask"].array.sum()) == 3000 and len(out.input_ids) == 750


def test_decoded_samples_equal_their_file(pipe):
    stereo = qwen2_audio_clips.samples("tone_44k1_stereo_2s.wav")
    from_file = pipe.process(mmf.MmInput(audios=[wav(stereo, 44100)], input_ids=[AUDIO]))
    decoded = pipe.process(mmf.MmInput(audios=[mmf.Audio(stereo, sample_rate=44100)], input_ids=[AUDIO]))
    assert decoded.items[0].feature == from_file.items[0].feature and decoded.input_ids.tolist() == \
        from_file.input_ids.tolist()
    family = Qwen2AudioFamily({k: v for k, v in mmf.preset("qwen2_audio").items() if k != "family"})
    mono = kernels.resample(stereo.T.mean(axis=0), 44100, 16000)
    assert np.array_equal(decoded.items[0].feature.array, family.audio.mel(mono))


def test_counts_need_only_the_header(pipe, monkeypatch):
    data = qwen2_audio_clips.make("chirp_22k05_mono_4s.flac")
    processed = pipe.process(mmf.MmInput(audios=[data]))
    monkeypatch.setattr(soundfile.SoundFile, "read", lambda *a, **k: pytest.fail("a count decoded samples"))
    counted = pipe.count_tokens(mmf.MmInput(audios=[data]))
    assert counted.input_ids.tolist() == processed.input_ids.tolist() == [AUDIO] * 100
    assert counted.items[0].geometry == processed.items[0].geometry
    assert processed.items[0].geometry.samples == 64000


def test_model_kwargs(pipe):
    clips = [qwen2_audio_clips.make(n) for n in ("short_8k_mono_0s4.wav", "voice_16k_mono_3s.wav")]
    out = pipe.process(mmf.MmInput(audios=clips, input_ids=[AUDIO, 5, AUDIO]))
    kw = out.model_kwargs()
    assert kw["input_features"].dtype == np.float32 and kw["input_features"].shape == (2, 128, 3000)
    assert kw["feature_attention_mask"].dtype == np.int32 and kw["feature_attention_mask"].shape == (2, 3000)
    assert kw["feature_attention_mask"].sum(-1).tolist() == [40, 300]
    assert np.array_equal(kw["input_features"][1], out.items[1].feature.array)
