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


# Kimi_K25VideoProcessor().to_dict()'s keys at the class defaults (as save_pretrained writes them).
VIDEO = {
    "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True, "do_sample_frames": True,
    "fps": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "max_patches": 4096, "merge_size": 2,
    "patch_size": 14, "resample": 3, "rescale_factor": 1 / 255, "return_metadata": False,
    "size": {"max_height": 512, "max_width": 512}, "temporal_patch_size": 4,
    "video_processor_type": "Kimi_K25VideoProcessor",
}


def test_the_class_defaults_resolve_to_the_preset():
    want = mmf.preset("kimi_k2_5")
    assert resolve(CONFIG, PREPROCESSOR, VIDEO) == want
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR, VIDEO) == want


def test_without_a_video_config_the_video_processor_reads_the_image_one():
    # AutoVideoProcessor falls back to preprocessor_config.json: its max_patches reaches the video.
    assert resolve(CONFIG, PREPROCESSOR) == {**mmf.preset("kimi_k2_5"), "video_max_patches": 16384}


@pytest.mark.parametrize(("change", "match"), [
    ({"num_frames": 8}, r"video_preprocessor_config.json: 'num_frames' must be null"),
    ({"patch_size": 16}, r"'patch_size' is 16, which differs from the image processor's 14"),
    ({"image_std": [0.2, 0.2, 0.2]}, r"'image_std' is \[0.2, 0.2, 0.2\], which differs"),
    ({"do_resize": False}, r"'do_resize' must be True"),
    ({"resample": 0}, r"'resample' must be one of"),
    ({"size": {"max_height": 64, "max_width": 32}}, r"'size' must be"),
    ({"video_processor_type": "Qwen2VLVideoProcessor"}, r"'video_processor_type' must be one of"),
    ({"crop_size": 3}, r"'crop_size' is not supported"),
])
def test_unimplemented_video_values_are_refused(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(CONFIG, PREPROCESSOR, {**VIDEO, **change})


def test_video_values_feed_the_spec():
    spec = resolve(CONFIG, PREPROCESSOR, {**VIDEO, "fps": 1.5, "max_patches": 256, "temporal_patch_size": 2,
                                          "size": {"max_height": 32, "max_width": 32}, "resample": 2})
    assert {k: spec[k] for k in ("video_fps", "video_max_patches", "temporal_patch_size", "video_max_size_per_side",
                                 "video_resample")} == {
        "video_fps": 1.5, "video_max_patches": 256, "temporal_patch_size": 2, "video_max_size_per_side": 32,
        "video_resample": "pil_bilinear"}
    spec = resolve(CONFIG, PREPROCESSOR, {**VIDEO, "do_sample_frames": False})
    assert (spec["video_sample_frames"], spec["video_fps"]) == (False, None)


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
