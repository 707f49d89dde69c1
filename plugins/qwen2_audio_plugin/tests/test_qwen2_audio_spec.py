"""The qwen2_audio spec and ``mm_spec_from_hf_configs``: the checkpoint's files resolve to
the preset, class defaults fill missing keys, and every unsupported key or value is
refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mm_framework as mmf
from qwen2_audio_plugin import hf_config, parse_spec

CHECKPOINT = Path(__file__).parent / "golden" / "models" / "qwen2-audio-7b-instruct"


def load() -> tuple[dict, dict]:
    return tuple(json.loads((CHECKPOINT / n).read_text()) for n in ("config.json", "preprocessor_config.json"))


def test_preset_is_the_checkpoint():
    assert mmf.spec_from_model_dir(CHECKPOINT) == mmf.preset("qwen2_audio") == {
        "family": "qwen2_audio", "audio_token_id": 151646, "feature_size": 128, "sampling_rate": 16000,
        "n_fft": 400, "hop_length": 160, "chunk_length": 30,
    }
    assert mmf.spec_from_hf_configs(*load()) == mmf.preset("qwen2_audio")


def test_class_defaults_fill_missing_keys():
    # WhisperFeatureExtractor's default is 80 mels; Qwen2AudioEncoderConfig's is 128.
    with pytest.raises(mmf.SpecError, match=r"num_mel_bins=128 disagrees with the preprocessor's feature_size 80"):
        mmf.spec_from_hf_configs({"model_type": "qwen2_audio"}, {})
    assert mmf.spec_from_hf_configs({"model_type": "qwen2_audio"}, {"feature_size": 128}) == mmf.preset("qwen2_audio")


def test_other_models_are_not_claimed():
    assert hf_config.resolve({"model_type": "qwen2_5_omni"}, {}) is None
    assert hf_config.resolve([], {}) is None


PP_REFUSALS = [
    ({"dither": 0.5}, r"^preprocessor_config.json: 'dither' must be 0.0 \(the only value implemented\), got 0.5$"),
    ({"padding_value": 1.0}, "'padding_value' must be 0.0"),
    ({"padding_side": "left"}, "'padding_side' must be 'right'"),
    ({"return_attention_mask": "yes"}, "'return_attention_mask' must be a boolean"),
    ({"feature_extractor_type": "SeamlessM4TFeatureExtractor"}, "'feature_extractor_type' must be one of"),
    ({"processor_class": "Qwen2_5OmniProcessor"}, "'processor_class' must be one of"),
    ({"n_samples": 240000}, r"'n_samples' must be 480000 \(from chunk_length, sampling_rate and hop_length\)"),
    ({"nb_max_frames": 1500}, "'nb_max_frames' must be 3000"),
    ({"mel_floor": 1e-10}, r"^preprocessor_config.json: 'mel_floor' is not supported by the qwen2_audio family$"),
    ({"feature_size": 80}, "num_mel_bins=128 disagrees with the preprocessor's feature_size 80"),
    ({"hop_length": 320}, r"'nb_max_frames' must be 1500"),
    ({"sampling_rate": 0}, r"^qwen2_audio spec: field 'sampling_rate' must be greater than zero, got 0$"),
]


@pytest.mark.parametrize("change, match", PP_REFUSALS, ids=[next(iter(c)) for c, _ in PP_REFUSALS])
def test_preprocessor_refusals_name_the_key(change, match):
    config, pp = load()
    with pytest.raises(mmf.SpecError, match=match):
        mmf.spec_from_hf_configs(config, {**pp, **change})


def test_dither_zero_as_an_integer_is_accepted():
    config, pp = load()
    assert mmf.spec_from_hf_configs(config, {**pp, "dither": 0}) == mmf.preset("qwen2_audio")


CONFIG_REFUSALS = [
    ({"audio_config": {"num_mel_bins": 80}}, "audio_config.num_mel_bins=80 disagrees with the preprocessor's"),
    ({"audio_config": {"max_source_positions": 750}},
     r"audio_config.max_source_positions=750 needs 1500 mel frames, the preprocessor gives 3000"),
    ({"audio_config": {"num_mel_bins": True}}, "audio_config.num_mel_bins must be a positive integer"),
    ({"audio_config": "whisper"}, "'audio_config' must be an object"),
    ({"audio_token_id": 5}, "'audio_token_id' disagrees with 'audio_token_index'"),
    ({"audio_token_index": -1}, "field 'audio_token_id' must be >= 0"),
]


@pytest.mark.parametrize("change, match", CONFIG_REFUSALS, ids=[str(i) for i in range(len(CONFIG_REFUSALS))])
def test_config_refusals_name_the_key(change, match):
    config, pp = load()
    with pytest.raises(mmf.SpecError, match=match):
        mmf.spec_from_hf_configs({**config, **change}, pp)


def test_preprocessor_config_must_be_an_object():
    with pytest.raises(mmf.SpecError, match="preprocessor_config.json: expected an object, got list"):
        hf_config.resolve({"model_type": "qwen2_audio"}, [])


SPEC_REFUSALS = [
    ({"n_fft": 960000}, r"field 'n_fft' must be below 2 \* chunk_length \* sampling_rate = 960000, got 960000"),
    ({"hop_length": 480001}, r"field 'hop_length' must be at most chunk_length \* sampling_rate = 480000"),
    ({"chunk_length": 601}, "field 'chunk_length' must be <= 600"),
    ({"feature_size": 513}, "field 'feature_size' must be <= 512"),
    ({"sampling_rate": 384001}, "field 'sampling_rate' must be <= 384000"),
    ({"audio_token_id": 2**31}, "field 'audio_token_id' must be <= 2147483647"),
]


@pytest.mark.parametrize("change, match", SPEC_REFUSALS, ids=[next(iter(c)) for c, _ in SPEC_REFUSALS])
def test_spec_bounds(change, match):
    fields = {k: v for k, v in mmf.preset("qwen2_audio").items() if k != "family"}
    with pytest.raises(mmf.SpecError, match=match):
        parse_spec({**fields, **change})
