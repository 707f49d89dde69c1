"""The video fields spec_from_hf_configs / spec_from_model_dir resolve, as transformers
builds a checkpoint's video processor (docs/families/qwen_vl_video.md §1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mm_framework as mmf
from qwen_vl_plugin.video_spec import VIDEO_FIELDS

MODELS = Path(__file__).parent / "golden" / "models"


def configs(model: str) -> tuple[dict, dict, dict | None]:
    video = MODELS / model / "video_preprocessor_config.json"
    return (*(json.loads((MODELS / model / n).read_text()) for n in ("config.json", "preprocessor_config.json")),
            json.loads(video.read_text()) if video.exists() else None)


def video_fields(spec: dict) -> dict:
    return {k: v for k, v in spec.items() if k in VIDEO_FIELDS}


def test_published_checkpoints():
    # Qwen2/2.5: no video config, so preprocessor_config.json's bounds per frame, every frame.
    assert video_fields(mmf.spec_from_model_dir(MODELS / "qwen2_vl_instruct")) == {
        "video_processor": "qwen2", "video_token_id": 151656, "video_min_pixels": 3136, "video_max_pixels": 12845056,
        "video_sample_frames": False}
    assert mmf.spec_from_model_dir(MODELS / "qwen2_5_vl_instruct")["tokens_per_second"] == 2
    # A bare config: the video processor's own class defaults, not the image processor's.
    bare = mmf.spec_from_model_dir(MODELS / "qwen2_vl_defaults")
    assert (bare["video_min_pixels"], bare["video_max_pixels"], bare["min_pixels"]) == (100352, 602112, 3136)
    assert video_fields(mmf.spec_from_model_dir(MODELS / "qwen3_vl_instruct")) == video_fields(mmf.preset("qwen3_vl"))


def test_tokens_per_second_class_default_and_config_ids():
    config, pp, _ = configs("qwen2_5_vl_instruct")
    del config["vision_config"]["tokens_per_second"]
    assert mmf.spec_from_hf_configs(config, pp)["tokens_per_second"] == 4
    config, pp, video = configs("qwen3_5")
    for key in ("video_token_id", "vision_start_token_id", "vision_end_token_id"):
        del config[key]
    spec = mmf.spec_from_hf_configs(config, pp, video)
    ids = (spec["video_token_id"], spec["vision_start_token_id"], spec["vision_end_token_id"])
    assert ids == (248057, 248053, 248054)
    assert spec["timestamp_token_ids"][" seconds"] == 6283
    config, pp, video = configs("qwen3_vl_instruct")
    moe = mmf.spec_from_hf_configs({**config, "model_type": "qwen3_vl_moe"}, pp, video)
    assert moe["timestamp_token_ids"][" seconds"] == 6486
    assert mmf.spec_from_hf_configs({**config, "video_token_id": 7}, pp, video)["video_token_id"] == 7


def test_sampling_settings():
    config, pp, video = configs("qwen3_vl_instruct")
    off = mmf.spec_from_hf_configs(config, pp, {**video, "do_sample_frames": False})
    assert off["video_sample_frames"] is False and "video_fps" not in off and "video_min_frames" not in off
    no_rate = mmf.spec_from_hf_configs(config, pp, {**video, "fps": None, "min_frames": 2})
    assert "video_fps" not in no_rate and no_rate["video_min_frames"] == 2
    # Qwen3VLVideoProcessor reads only size: top-level min/max_pixels do nothing.
    assert mmf.spec_from_hf_configs(config, pp, {**video, "min_pixels": 1, "max_pixels": 2}) == mmf.preset("qwen3_vl")
    # Qwen2: the preprocessor config feeds the video processor, sampling keys included.
    config, pp, _ = configs("qwen2_vl_instruct")
    spec = mmf.spec_from_hf_configs(config, {**pp, "do_sample_frames": True, "fps": 2, "max_frames": 64})
    assert (spec["video_fps"], spec["video_min_frames"], spec["video_max_frames"]) == (2.0, 4, 64)
    inert = {"max_video_tokens": 99, "return_metadata": True, "cap_pixels_per_frame": False, "num_frames": None,
             "video_processor_type": "Qwen2VLVideoProcessor"}
    assert mmf.spec_from_hf_configs(config, {**pp, **inert}) == mmf.preset("qwen2_vl")


@pytest.mark.parametrize(("changes", "key"), [
    ({"cap_pixels_per_frame": True}, "cap_pixels_per_frame"),
    ({"num_frames": 16}, "num_frames"),
    ({"video_processor_type": "Qwen2VLVideoProcessor"}, "video_processor_type"),
    ({"patch_size": 14}, "patch_size"),
    ({"image_mean": [0.4, 0.5, 0.5]}, "image_mean"),
    ({"temporal_patch_size": 3}, "temporal_patch_size"),
    ({"do_sample_frames": "yes"}, "do_sample_frames"),
    ({"do_resize": False}, "do_resize"),
    ({"resample": 2}, "resample"),
    ({"processor_class": "LlavaProcessor"}, "processor_class"),
    ({"size": {"height": 448, "width": 448}}, "size"),
    ({"do_center_crop": False}, "do_center_crop"),
    ({"image_processor_type": "Qwen2VLImageProcessor"}, "image_processor_type"),
    ({"fps": -1}, "video_fps"),
    ({"max_frames": 0}, "video_max_frames"),
])
def test_video_config_keys_are_consumed_or_refused_by_name(changes, key):
    config, pp, video = configs("qwen3_vl_instruct")
    with pytest.raises(mmf.SpecError, match=f"'{key}'"):
        mmf.spec_from_hf_configs(config, pp, {**video, **changes})


def test_preprocessor_fallback_rules():
    config, pp, video = configs("qwen2_vl_instruct")
    with pytest.raises(mmf.SpecError, match="preprocessor_config.json: 'fps' is required when do_sample_frames"):
        mmf.spec_from_hf_configs(config, {**pp, "do_sample_frames": True})
    # With a video config of its own, video-only keys in preprocessor_config.json are read by nobody.
    with pytest.raises(mmf.SpecError, match="preprocessor_config.json: 'fps' is read by neither processor"):
        mmf.spec_from_hf_configs(config, {**pp, "fps": 2}, {"min_pixels": 3136})
    with pytest.raises(mmf.SpecError, match="video_preprocessor_config.json: expected an object"):
        mmf.spec_from_hf_configs(config, pp, [])
    # A video config of a Qwen2 model: its own bounds, min/max_pixels overriding size.
    spec = mmf.spec_from_hf_configs(config, pp, {"size": {"shortest_edge": 1, "longest_edge": 2}, "max_pixels": 50176})
    assert (spec["video_min_pixels"], spec["video_max_pixels"]) == (1, 50176)
    with pytest.raises(mmf.SpecError, match="'video_token_id' must differ from 'image_token_id'"):
        mmf.spec_from_hf_configs({**config, "video_token_id": config["image_token_id"]}, pp)
