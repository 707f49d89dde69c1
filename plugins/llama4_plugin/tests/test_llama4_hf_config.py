"""``spec_from_hf_configs``: the published checkpoints' files resolve to the presets; every
preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from llama4_plugin.hf_config import resolve

from .llama4_reference import IMAGE_CONFIG

# The model keys the resolver reads, as the published config.json holds them (the rest is
# the language model's); Scout and Maverick share them.
CONFIG = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4", "image_token_index": 200092,
          "boi_token_index": 200080, "eoi_token_index": 200081,
          "vision_config": {"image_size": 336, "patch_size": 14, "pixel_shuffle_ratio": 0.5,
                            "model_type": "llama4_vision_model"}}
# The published preprocessor_config.json: IMAGE_CONFIG plus the keys it writes out as null or inert.
PREPROCESSOR = {**IMAGE_CONFIG, "crop_size": None, "data_format": "channels_first", "default_to_square": True,
                "device": None, "do_center_crop": None, "input_data_format": None, "return_tensors": None,
                "image_processor_type": "Llama4ImageProcessorFast", "processor_class": "Llama4Processor"}


def test_published_files_resolve_to_the_presets():
    want = mmf.preset("llama4_scout_17b_16e_instruct")
    assert resolve(CONFIG, PREPROCESSOR) == want
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == want
    assert want == mmf.preset("llama4_maverick_17b_128e_instruct")


def test_missing_keys_take_the_class_defaults():
    assert resolve(CONFIG, {}) == mmf.preset("llama4_scout_17b_16e_instruct")


def test_other_models_are_not_ours():
    assert resolve({"model_type": "gemma3"}, PREPROCESSOR) is None


@pytest.mark.parametrize(("change", "match"), [
    ({"resample": 0}, "'resample' must be one of"),
    ({"size": {"height": 336, "width": 448}}, "'size' must be a square"),
    ({"size": {"height": 448, "width": 448}}, "disagrees with config.json vision_config.image_size"),
    ({"do_resize": False}, "'do_resize'"),
    ({"do_center_crop": True}, "'do_center_crop'"),
    ({"image_processor_type": "Gemma3ImageProcessor"}, "'image_processor_type'"),
    ({"do_pan_and_scan": True}, "'do_pan_and_scan' is not supported by the llama4 family"),
    ({"max_patches": 0}, "max_patches"),
])
def test_unimplemented_preprocessor_values_are_refused(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(CONFIG, {**PREPROCESSOR, **change})


@pytest.mark.parametrize(("change", "match"), [
    ({"image_token_index": 128256}, "'image_token_index'=128256 is not the <|patch|> id"),
    ({"boi_token_index": 1}, "'boi_token_index'=1 disagrees"),
    ({"vision_config": []}, "vision_config"),
])
def test_unknown_vocabularies_are_refused(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve({**CONFIG, **change}, PREPROCESSOR)
