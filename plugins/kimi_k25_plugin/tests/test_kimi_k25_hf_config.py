"""``spec_from_hf_configs``: a transformers-format Kimi K2.5 checkpoint resolves to the preset;
every preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from kimi_k25_plugin.hf_config import resolve

# The model keys the resolver reads (Kimi_K25Config / Kimi_K25VisionConfig defaults; the rest
# is the DeepSeek-V3 language model's).
CONFIG = {"architectures": ["Kimi_K25ForConditionalGeneration"], "model_type": "kimi_k25", "image_token_id": 163605,
          "video_token_id": 163840, "vision_config": {"model_type": "kimi_k25_vision", "patch_size": 14,
                                                      "merge_kernel_size": [2, 2]}}
# Kimi_K25ImageProcessor.to_dict()'s keys at the class defaults.
PREPROCESSOR = {
    "do_resize": True, "size": {"max_height": 512, "max_width": 512}, "resample": 3, "max_patches": 16384,
    "patch_size": 14, "merge_size": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True,
    "image_processor_type": "Kimi_K25ImageProcessor", "processor_class": "Kimi_K25Processor",
}


def test_the_class_defaults_resolve_to_the_preset():
    want = mmf.preset("kimi_k2_5")
    assert resolve(CONFIG, PREPROCESSOR) == want
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == want


def test_missing_keys_take_the_class_defaults():
    assert resolve({"model_type": "kimi_k25"}, {}) == mmf.preset("kimi_k2_5")


def test_values_feed_the_spec():
    spec = resolve(CONFIG, {**PREPROCESSOR, "size": {"max_height": 64, "max_width": 64}, "resample": 1,
                            "max_patches": 4096, "image_mean": [0.1, 0.2, 0.3]})
    assert (spec["max_size_per_side"], spec["resample"], spec["max_patches"], spec["image_mean"]) == (
        64, "pil_lanczos", 4096, [0.1, 0.2, 0.3])


def test_other_models_are_not_ours():
    assert resolve({"model_type": "kimi_vl"}, PREPROCESSOR) is None


@pytest.mark.parametrize(("change", "match"), [
    ({"resample": 0}, "'resample' must be one of"),
    ({"size": {"max_height": 512, "max_width": 256}}, "'size' must be"),
    ({"size": {"height": 512, "width": 512}}, "'size' must be"),
    ({"do_resize": False}, "'do_resize'"),
    ({"do_convert_rgb": False}, "'do_convert_rgb'"),
    ({"image_processor_type": "Qwen2VLImageProcessor"}, "'image_processor_type'"),
    ({"in_patch_limit": 16384}, "'in_patch_limit' is not supported by the kimi_k25 family"),
    ({"max_patches": 0}, "max_patches"),
])
def test_unimplemented_preprocessor_values_are_refused(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(CONFIG, {**PREPROCESSOR, **change})


@pytest.mark.parametrize(("change", "match"), [
    ({"vision_config": {"patch_size": 16}}, "vision_config.patch_size=16 disagrees"),
    ({"vision_config": {"merge_kernel_size": [2, 1]}}, r"vision_config.merge_kernel_size=\[2, 1\] disagrees"),
    ({"vision_config": []}, "vision_config"),
    ({"image_token_id": "x"}, "image_token_id"),
])
def test_disagreeing_model_configs_are_refused(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve({**CONFIG, **change}, PREPROCESSOR)
