"""``mm_spec_from_hf_configs``: a MiniCPM-V 4.6 ``config.json`` + ``preprocessor_config.json``
resolve to the preset's spec; every preprocessor key is consumed or refused by name."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from minicpmv4_6_plugin.hf_config import resolve

CONFIG = {"model_type": "minicpmv4_6", "image_token_id": 248056, "video_token_id": 248057, "downsample_mode": "16x",
          "vision_config": {"patch_size": 14}}
# MiniCPMV4_6ImageProcessorPil's options as a saved preprocessor_config.json writes them.
PREPROCESSOR = {
    "image_processor_type": "MiniCPMV4_6ImageProcessor", "processor_class": "MiniCPMV4_6Processor",
    "do_convert_rgb": True, "do_resize": True, "resample": 3, "do_rescale": True, "rescale_factor": 1 / 255,
    "do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "max_slice_nums": 9,
    "scale_resolution": 448, "patch_size": 14, "slice_mode": True, "downsample_mode": "16x", "use_image_id": True,
}


def test_the_published_files_resolve_to_the_preset():
    assert resolve(CONFIG, PREPROCESSOR) == mmf.preset("minicpm_v_4_6")
    assert resolve(CONFIG, {}) == mmf.preset("minicpm_v_4_6")


def test_options_feed_the_spec():
    spec = resolve({**CONFIG, "downsample_mode": "4x"}, {**PREPROCESSOR, "downsample_mode": "4x", "max_slice_nums": 36,
                                                         "resample": 2, "use_image_id": False})
    assert spec == {**mmf.preset("minicpm_v_4_6_4x"), "max_slice_nums": 36, "resample": "pil_bilinear",
                    "use_image_id": False, "video_max_slice_nums": 36}


VIDEO = {"video_processor_type": "MiniCPMV4_6VideoProcessor", "processor_class": "MiniCPMV4_6Processor",
         "max_num_frames": 64, "stack_frames": 3, "do_sample_frames": True, "max_slice_nums": 4, "slice_mode": False,
         "scale_resolution": 224, "use_image_id": True, "patch_size": 14, "resample": 3}


def test_the_video_config_feeds_the_video_fields():
    spec = resolve(CONFIG, PREPROCESSOR, VIDEO)
    assert spec == {**mmf.preset("minicpm_v_4_6"), "video_max_num_frames": 64, "video_stack_frames": 3,
                    "video_max_slice_nums": 4,
                    "video_slice_mode": False, "video_scale_resolution": 224}
    # Without video_preprocessor_config.json the video processor reads preprocessor_config.json.
    assert resolve(CONFIG, {**PREPROCESSOR, "max_num_frames": 32})["video_max_num_frames"] == 32
    # Without video_token_id the model takes no video.
    no_video = {k: v for k, v in CONFIG.items() if k != "video_token_id"}
    assert resolve(no_video, PREPROCESSOR)["video_token_id"] is None


def test_other_models_are_not_ours():
    assert resolve({"model_type": "qwen2_vl"}, PREPROCESSOR) is None


@pytest.mark.parametrize(("config", "pp", "match"), [
    (CONFIG, {**PREPROCESSOR, "size": {"height": 448}}, r"'size' is not supported by the minicpmv4_6 family"),
    (CONFIG, {**PREPROCESSOR, "do_resize": False}, r"'do_resize'"),
    (CONFIG, {**PREPROCESSOR, "resample": 0}, r"'resample' must be one of"),
    (CONFIG, {**PREPROCESSOR, "image_processor_type": "Other"}, r"'image_processor_type'"),
    (CONFIG, {**PREPROCESSOR, "downsample_mode": "4x"}, r"'downsample_mode'.*disagrees with config.json"),
    ({**CONFIG, "image_token_id": 151655}, PREPROCESSOR, r"'image_token_id'=151655 is not one of the published"),
    (CONFIG, {**PREPROCESSOR, "max_slice_nums": 0}, r"max_slice_nums"),
    (CONFIG, {**PREPROCESSOR, "stack_frames": 0}, r"'video_stack_frames'"),
    ({**CONFIG, "video_token_id": 5}, PREPROCESSOR, r"'video_token_id'=5 is not <\|video_pad\|>"),
])
def test_bad_files_are_refused_by_name(config, pp, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(config, pp)


@pytest.mark.parametrize(("video", "match"), [
    ({**VIDEO, "stack_frames": 0}, r"'video_stack_frames'"),
    ({**VIDEO, "do_sample_frames": False}, r"'do_sample_frames'"),
    ({**VIDEO, "patch_size": 16}, r"video_preprocessor_config.json: 'patch_size' 16 differs"),
    ({**VIDEO, "image_mean": [0.4, 0.5, 0.5]}, r"'image_mean'"),
    ({**VIDEO, "downsample_mode": "4x"}, r"'downsample_mode'.*disagrees"),
    ({**VIDEO, "fps": 2}, r"'fps'"),
    ({**VIDEO, "video_processor_type": "Qwen3VLVideoProcessor"}, r"'video_processor_type'"),
])
def test_bad_video_configs_are_refused_by_name(video, match):
    with pytest.raises(mmf.SpecError, match=match):
        resolve(CONFIG, PREPROCESSOR, video)


def test_the_engine_finds_the_resolver_through_the_entry_point():
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == mmf.preset("minicpm_v_4_6")
