"""``spec_from_hf_configs``: google/gemma-3-4b-it's files resolve to the preset; every
preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import copy

import pytest

import mm_framework as mmf
from gemma3_plugin.hf_config import resolve
from .gemma3_reference import PREPROCESSOR_CONFIG as PREPROCESSOR  # google/gemma-3-4b-it's (docs/families/gemma3.md §1)

CONFIG = {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3", "text_config": {"hidden_size": 2560, "model_type": "gemma3_text"},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model", "patch_size": 14},
}


def test_published_configs_give_the_preset():
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == mmf.preset("gemma3_4b_it")


def test_other_models_are_not_claimed():
    assert resolve({"model_type": "gemma3_text"}, PREPROCESSOR) is None
    assert resolve([], PREPROCESSOR) is None


def test_missing_keys_take_transformers_defaults():
    spec = resolve({"model_type": "gemma3"}, {"size": {"height": 896, "width": 896}})
    assert spec == mmf.preset("gemma3_4b_it")
    small = resolve({"model_type": "gemma3"}, {})
    assert (small["height"], small["width"]) == (224, 224)  # Gemma3ImageProcessorPil's class size


def test_processor_defaults_are_accepted_when_spelt_out():
    pp = {**PREPROCESSOR, "do_convert_rgb": True, "do_pan_and_scan": False, "pan_and_scan_min_crop_size": 256,
          "pan_and_scan_max_num_crops": 4, "pan_and_scan_min_ratio_to_activate": 1.2, "default_to_square": True}
    assert resolve(CONFIG, pp) == mmf.preset("gemma3_4b_it")


def test_token_ids_and_resample_follow_the_files():
    cfg = {**CONFIG, "image_token_index": 7, "boi_token_index": 8, "eoi_token_index": 9, "mm_tokens_per_image": 64}
    spec = resolve(cfg, {**PREPROCESSOR, "image_seq_length": 64, "resample": 3})
    assert (spec["image_token_id"], spec["boi_token_id"], spec["eoi_token_id"]) == (7, 8, 9)
    assert (spec["image_seq_length"], spec["resample"]) == (64, "pil_bicubic")
    assert resolve({**CONFIG, "image_token_id": 262144}, PREPROCESSOR)["image_token_id"] == 262144


REFUSED = [
    ("not_a_key", 1, "'not_a_key' is not supported by the gemma3 family"),
    ("do_resize", False, "'do_resize' must be True"),
    ("default_to_square", False, "'default_to_square' must be True"),
    ("do_convert_rgb", False, "'do_convert_rgb' must be null or True: Gemma3Processor overrides it"),
    ("do_pan_and_scan", True, "'do_pan_and_scan' must be null or False"),
    ("pan_and_scan_min_crop_size", 128, "'pan_and_scan_min_crop_size' must be null or 256"),
    ("pan_and_scan_max_num_crops", 8, "'pan_and_scan_max_num_crops' must be null or 4"),
    ("pan_and_scan_min_ratio_to_activate", 2.0, "'pan_and_scan_min_ratio_to_activate' must be null or 1.2"),
    ("image_processor_type", "SiglipImageProcessor", "'image_processor_type' must be one of"),
    ("processor_class", "PaliGemmaProcessor", "'processor_class' must be one of"),
    ("resample", 0, "'resample' must be one of \\[1, 2, 3\\]"),
    ("resample", True, "'resample' must be one of"),
    ("image_seq_length", 128, "'image_seq_length' =128 disagrees with config.json mm_tokens_per_image=256"),
    ("size", {"shortest_edge": 896}, "'size' must be an object with exactly height and width"),
    ("size", [896, 896], "'size' must be an object"),
]


@pytest.mark.parametrize(("key", "value", "message"), REFUSED, ids=[f"{k}={v!r}" for k, v, _ in REFUSED])
def test_refused_preprocessor_values_name_the_key(key, value, message):
    with pytest.raises(mmf.SpecError, match=f"preprocessor_config.json: {message}"):
        resolve(CONFIG, {**PREPROCESSOR, key: value})


def test_values_reach_the_spec_checks():
    with pytest.raises(mmf.SpecError, match="gemma3 spec: field 'image_std'"):
        resolve(CONFIG, {**PREPROCESSOR, "image_std": [0.5, 0, 0.5]})
    with pytest.raises(mmf.SpecError, match="gemma3 spec: field 'height'"):
        resolve(CONFIG, {**PREPROCESSOR, "size": {"height": 0, "width": 896}})


def test_config_disagreements_are_refused():
    vision = copy.deepcopy(CONFIG)
    vision["vision_config"]["image_size"] = 448
    match = "vision_config.image_size=448 disagrees with the preprocessor's size 896x896"
    with pytest.raises(mmf.SpecError, match=match):
        resolve(vision, PREPROCESSOR)
    with pytest.raises(mmf.SpecError, match="'vision_config' must be an object"):
        resolve({**CONFIG, "vision_config": 3}, PREPROCESSOR)
    with pytest.raises(mmf.SpecError, match="'image_token_index'=262144 and 'image_token_id'=5 disagree"):
        resolve({**CONFIG, "image_token_id": 5}, PREPROCESSOR)
    with pytest.raises(mmf.SpecError, match="expected an object"):
        resolve(CONFIG, [])
