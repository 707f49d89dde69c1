"""inkling's ``mm_spec_from_hf_configs``: transformers 5.24's own Inkling config files resolve."""

from __future__ import annotations

import json

import pytest
from transformers.models.inkling.configuration_inkling import InklingConfig

import mm_framework
from inkling_plugin.family import InklingFamily
from inkling_plugin.hf_config import resolve
from mm_framework.plugin import SpecError

# InklingImageProcessor().to_dict() | InklingFeatureExtractor().to_dict() in transformers 5.24
# (both need torch, absent from this venv), plus InklingProcessor's dMel __init__ defaults.
PREPROCESSOR = {
    "do_convert_rgb": True, "resample": 1, "do_rescale": True, "rescale_factor": 0.00392156862745098,
    "do_normalize": True, "rescale_image_max_upscaled_long_edge": 2048, "size": {"height": 40, "width": 40},
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "InklingImageProcessor",
    "feature_size": 80, "sampling_rate": 16000, "padding_value": 0.0, "padding_side": "right",
    "return_attention_mask": True, "audio_token_duration_s": 0.05, "window_size_multiplier": 2.0,
    "hop_length": 800, "window_size": 1600, "n_fft": 1600, "feature_extractor_type": "InklingFeatureExtractor",
    "num_dmel_bins": 16, "dmel_min_value": -7.0, "dmel_max_value": 2.0, "processor_class": "InklingProcessor",
}
# The family spec of the transformers defaults: the vocabulary's image token, no rescale.
EXPECTED = InklingFamily({"image_token_id": 200054, "rescale_frac": None, "rescale_cap": None}).mm_resolved_spec()


def _config() -> dict:
    return json.loads(InklingConfig().to_json_string())


def test_transformers_defaults_resolve_to_the_family_spec() -> None:
    assert resolve(_config(), PREPROCESSOR) == EXPECTED


def test_rescale_keys_map_to_the_spec() -> None:
    spec = resolve(_config(), {**PREPROCESSOR, "rescale_image_frac": 2.0})
    assert {k: spec[k] for k in ("patch_size", "rescale_frac", "rescale_cap")} == {
        "patch_size": 40, "rescale_frac": 2.0, "rescale_cap": 2048}


def test_audio_and_token_keys_map_to_the_spec() -> None:
    config = {**_config(), "image_token_id": 7, "audio_token_id": 8}
    config["audio_config"]["n_mel_bins"] = 64
    pp = {**PREPROCESSOR, "sampling_rate": 24000, "feature_size": 64, "num_dmel_bins": 32, "hop_length": 1200,
          "window_size": 2400, "n_fft": 4096, "dmel_min_value": -6.0, "rescale_image_frac": 0.5}
    spec = resolve(config, pp)
    assert {k: spec[k] for k in ("image_token_id", "audio_token_id", "sampling_rate", "feature_size",
                                 "num_dmel_bins", "n_fft", "dmel_min_value", "rescale_frac", "rescale_cap")} == {
        "image_token_id": 7, "audio_token_id": 8, "sampling_rate": 24000, "feature_size": 64,
        "num_dmel_bins": 32, "n_fft": 4096, "dmel_min_value": -6.0, "rescale_frac": 0.5, "rescale_cap": None}


def test_model_dir(tmp_path) -> None:
    (tmp_path / "config.json").write_text(InklingConfig().to_json_string())
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR))
    spec = mm_framework.spec_from_model_dir(tmp_path)
    assert spec == EXPECTED
    assert mm_framework.pipeline_from_spec(spec) is not None


def test_other_model_type_is_not_inkling() -> None:
    assert resolve({**_config(), "model_type": "gemma3"}, PREPROCESSOR) is None


@pytest.mark.parametrize(("change", "message"), [
    ({"do_pan_and_scan": True}, "'do_pan_and_scan' is not supported by the inkling family"),
    ({"resample": 3}, "'resample' must be 1"),
    ({"image_mean": [0.5, 0.5, 0.5]}, "'image_mean' must be"),
    ({"size": {"height": 40, "width": 32}}, "'size' must be a square"),
    ({"hop_length": 400}, "'hop_length' must be 800 \\(from audio_token_duration_s"),
    ({"image_processor_type": "Gemma3ImageProcessor"}, "'image_processor_type' must be one of"),
])
def test_refused_by_name(change: dict, message: str) -> None:
    with pytest.raises(SpecError, match="preprocessor_config.json: " + message.replace("[", r"\[")):
        resolve(_config(), {**PREPROCESSOR, **change})


def test_vision_patch_size_must_match() -> None:
    config = _config()
    config["vision_config"]["patch_size"] = 32
    with pytest.raises(SpecError, match=r"vision_config.patch_size=32 disagrees"):
        resolve(config, PREPROCESSOR)


def test_preprocessor_keys_are_the_transformers_classes() -> None:
    """PREPROCESSOR is what the torch-backed classes write (run in the torch venv)."""
    pytest.importorskip("torch")
    from transformers.models.inkling.feature_extraction_inkling import InklingFeatureExtractor
    from transformers.models.inkling.image_processing_inkling import InklingImageProcessor

    dmel = {"num_dmel_bins": 16, "dmel_min_value": -7.0, "dmel_max_value": 2.0, "processor_class": "InklingProcessor"}
    written = json.loads(json.dumps({**InklingImageProcessor().to_dict(), **InklingFeatureExtractor().to_dict()}))
    assert {**written, **dmel} == PREPROCESSOR
    assert resolve(_config(), {**written, **dmel}) == EXPECTED
