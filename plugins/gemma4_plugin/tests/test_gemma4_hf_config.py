"""``mm_spec_from_hf_configs`` for Gemma 4: every preprocessor key consumed, each refusal named."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from gemma4_plugin.hf_config import resolve

CONFIG = {"model_type": "gemma4", "image_token_id": 258880, "boi_token_id": 255999, "eoi_token_id": 258882,
          "vision_config": {"model_type": "gemma4_vision", "patch_size": 16, "pooling_kernel_size": 3}}
# Gemma4ImageProcessorPil().to_dict() as saved, plus the processor keys a merged file may hold.
PREPROCESSOR = {
    "do_convert_rgb": True, "do_normalize": False, "do_rescale": True, "do_resize": True,
    "image_mean": [0.0, 0.0, 0.0], "image_processor_type": "Gemma4ImageProcessor", "image_std": [1.0, 1.0, 1.0],
    "max_soft_tokens": 280, "patch_size": 16, "pooling_kernel_size": 3, "resample": 3,
    "rescale_factor": 0.00392156862745098, "processor_class": "Gemma4Processor", "image_seq_length": 280,
}


# Gemma4VideoProcessor().to_dict() (transformers 5.24) as saved.
VIDEO = {"do_convert_rgb": True, "do_resize": True, "resample": 3, "do_rescale": True,
         "rescale_factor": 0.00392156862745098, "do_normalize": True, "do_sample_frames": True, "num_frames": 32,
         "return_metadata": False, "patch_size": 16, "max_soft_tokens": 70, "pooling_kernel_size": 3,
         "image_mean": [0.0, 0.0, 0.0], "image_std": [1.0, 1.0, 1.0], "video_processor_type": "Gemma4VideoProcessor"}


def test_the_published_config_resolves_to_the_preset():
    assert resolve(CONFIG, PREPROCESSOR, VIDEO) == mmf.preset("gemma4")
    assert resolve({"model_type": "gemma4"}, {}, {}) == mmf.preset("gemma4")


def test_without_a_video_config_the_preprocessor_config_is_the_video_processors():
    # AutoVideoProcessor then builds Gemma4VideoProcessor from preprocessor_config.json
    # (checked in the tv venv: max_soft_tokens 280, do_normalize False, num_frames 32).
    spec = resolve(CONFIG, {**PREPROCESSOR, "num_frames": None, "fps": 1.5})
    assert (spec["video_max_soft_tokens"], spec["video_do_normalize"]) == (280, False)
    assert (spec["video_num_frames"], spec["video_fps"]) == (None, 1.5)
    assert resolve({"model_type": "gemma4"}, {})["video_max_soft_tokens"] == 70


def test_video_values_feed_the_spec():
    spec = resolve({**CONFIG, "video_token_id": 5}, PREPROCESSOR, {
        **VIDEO, "max_soft_tokens": 140, "resample": 2, "do_sample_frames": False, "image_mean": [0.5] * 3})
    assert (spec["video_token_id"], spec["video_max_soft_tokens"], spec["video_resample"]) == (5, 140, "pil_bilinear")
    assert (spec["video_do_sample_frames"], spec["video_image_mean"]) == (False, [0.5] * 3)


def test_other_models_are_not_ours():
    assert resolve({"model_type": "gemma3"}, PREPROCESSOR) is None


def test_values_feed_the_spec():
    pp = {**PREPROCESSOR, "max_soft_tokens": 560, "resample": 2, "do_normalize": True, "image_mean": [0.5] * 3,
          "image_std": [0.5] * 3}
    spec = resolve({**CONFIG, "image_token_id": 7, "boi_token_id": 8, "eoi_token_id": 9}, pp)
    assert (spec["max_soft_tokens"], spec["resample"], spec["do_normalize"]) == (560, "pil_bilinear", True)
    assert (spec["image_token_id"], spec["boi_token_id"], spec["eoi_token_id"]) == (7, 8, 9)


@pytest.mark.parametrize(("config", "pp", "match"), [
    (CONFIG, {**PREPROCESSOR, "crop_size": 224}, r"'crop_size' is not supported by the gemma4 family"),
    (CONFIG, {**PREPROCESSOR, "do_resize": False}, r"'do_resize' must be True"),
    (CONFIG, {**PREPROCESSOR, "size": {"height": 224, "width": 224}}, r"'size' must be None"),
    (CONFIG, {**PREPROCESSOR, "image_processor_type": "SiglipImageProcessor"}, r"'image_processor_type' must be"),
    (CONFIG, {**PREPROCESSOR, "resample": 0}, r"'resample' must be one of"),
    (CONFIG, {**PREPROCESSOR, "max_soft_tokens": 256}, r"max_soft_tokens.*must be one of"),
    ({**CONFIG, "vision_config": {"patch_size": 14}}, PREPROCESSOR, r"vision_config.patch_size=14 disagrees"),
    ({**CONFIG, "vision_config": {"pooling_kernel_size": 2}}, PREPROCESSOR,
     r"vision_config.pooling_kernel_size=2 disagrees"),
    ({**CONFIG, "vision_config": [1]}, PREPROCESSOR, r"'vision_config' must be an object"),
])
def test_refusals_name_the_key(config, pp, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(config, pp)


@pytest.mark.parametrize(("video", "match"), [
    ({**VIDEO, "crop_size": 224}, r"video_preprocessor_config.json: 'crop_size' is not supported"),
    ({**VIDEO, "do_resize": False}, r"video_preprocessor_config.json: 'do_resize' must be True"),
    ({**VIDEO, "video_processor_type": "Qwen3VLVideoProcessor"}, r"'video_processor_type' must be"),
    ({**VIDEO, "resample": 0}, r"video_preprocessor_config.json: 'resample' must be one of"),
    ({**VIDEO, "patch_size": 14}, r"'patch_size' must equal the image processor's patch_size=16"),
    ({**VIDEO, "pooling_kernel_size": 2}, r"'pooling_kernel_size' must equal"),
    ({**VIDEO, "max_soft_tokens": 100}, r"video_max_soft_tokens.*must be one of"),
    ({**VIDEO, "fps": 2}, r"video_fps.*mutually exclusive"),
    ([1], r"video_preprocessor_config.json: expected an object"),
])
def test_video_refusals_name_the_key(video, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(CONFIG, PREPROCESSOR, video)


def test_the_hook_passes_the_video_config():
    from gemma4_plugin.plugin import mm_spec_from_hf_configs

    spec = mm_spec_from_hf_configs(config=CONFIG, preprocessor_config=PREPROCESSOR,
                                   video_preprocessor_config={**VIDEO, "num_frames": 8})
    assert spec["video_num_frames"] == 8
