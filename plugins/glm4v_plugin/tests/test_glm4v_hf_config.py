"""``spec_from_hf_configs``: the published GLM-4.1V / 4.5V / 4.6V files resolve to the presets;
every preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

import mm_framework as mmf
from glm4v_plugin.hf_config import KNOWN, VIDEO_KNOWN, resolve

# A published preprocessor_config.json (GLM-4.6V-Flash's; GLM-4.1V's and GLM-4.5V's name the
# Glm4v classes).
PREPROCESSOR = {
    "size": {"shortest_edge": 12544, "longest_edge": 9633792}, "do_rescale": True, "patch_size": 14,
    "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711], "image_processor_type": "Glm46VImageProcessor",
    "processor_class": "Glm46VProcessor",
}
# video_preprocessor_config.json as GLM-4.1V-9B-Thinking publishes it (the class defaults;
# GLM-4.6V-Flash's names the Glm46V classes).
VIDEO = {"size": {"shortest_edge": 12544, "longest_edge": 47040000}, "do_resize": True, "patch_size": 14,
         "temporal_patch_size": 2, "merge_size": 2, "image_mean": PREPROCESSOR["image_mean"],
         "image_std": PREPROCESSOR["image_std"], "video_processor_type": "Glm4vVideoProcessor",
         "processor_class": "Glm4vProcessor"}
VIDEO46 = {**VIDEO, "video_processor_type": "Glm46VVideoProcessor", "processor_class": "Glm46VProcessor"}
GLM4V = {**PREPROCESSOR, "image_processor_type": "Glm4vImageProcessor", "processor_class": "Glm4vProcessor"}
VISION = {"patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "image_size": 336}
CONFIG = {"model_type": "glm4v", "image_token_id": 151343, "image_start_token_id": 151339,
          "image_end_token_id": 151340, "vision_config": VISION}


@pytest.mark.parametrize(("config", "pp", "preset"), [
    (CONFIG, GLM4V, "glm4_1v_9b_thinking"),
    ({**CONFIG, "model_type": "glm4v_moe", "image_token_id": 151363}, GLM4V, "glm4_5v"),
    ({**CONFIG, "image_token_id": 151363, "video_token_id": 151364}, PREPROCESSOR, "glm4_6v"),
    ({**CONFIG, "model_type": "glm46v", "image_token_id": 151363, "video_token_id": 151364}, PREPROCESSOR, "glm4_6v"),
], ids=["glm4_1v", "glm4_5v", "glm4_6v_flash", "glm46v"])
def test_the_configs_give_the_presets(config, pp, preset):
    video = VIDEO46 if pp is PREPROCESSOR else VIDEO
    assert mmf.spec_from_hf_configs(config, pp, video) == mmf.preset(preset)


def test_other_models_are_not_claimed():
    assert resolve({"model_type": "qwen2_vl"}, PREPROCESSOR) is None
    assert resolve([], PREPROCESSOR) is None


@pytest.mark.parametrize(("model_type", "token"), [("glm4v", 151343), ("glm46v", 151343), ("glm4v_moe", 151363)])
def test_missing_keys_take_transformers_defaults(model_type, token):
    spec = resolve({"model_type": model_type}, {})
    video = {"glm4v": 151344, "glm46v": 151344, "glm4v_moe": 151364}[model_type]
    assert spec == {**mmf.preset("glm4_1v_9b_thinking"), "image_token_id": token, "max_pixels": 28 * 28 * 15000,
                    "video_token_id": video, "video_variant": "glm46v" if model_type == "glm46v" else "glm4v"}


def test_the_files_fields_are_followed():
    pp = {**PREPROCESSOR, "patch_size": 16, "merge_size": 1, "temporal_patch_size": 1, "image_mean": [0.5] * 3,
          "size": {"shortest_edge": 784, "longest_edge": 200704}}
    spec = resolve({"model_type": "glm4v", "image_token_id": 7,
                    "vision_config": {"patch_size": 16, "spatial_merge_size": 1, "temporal_patch_size": 1}}, pp)
    got = (spec["image_token_id"], spec["patch_size"], spec["merge_size"], spec["temporal_patch_size"])
    assert got == (7, 16, 1, 1)
    assert (spec["min_pixels"], spec["max_pixels"], spec["image_mean"]) == (784, 200704, [0.5] * 3)


REFUSED = [
    ("not_a_key", 1, "'not_a_key' is not supported by the glm4v family"),
    # Qwen2-VL's overrides: Glm4vImageProcessor has no such arguments (transformers ignores them).
    ("min_pixels", 784, "'min_pixels' is not supported"),
    ("max_pixels", 200704, "'max_pixels' is not supported"),
    ("do_resize", False, "'do_resize' must be True"),
    ("do_rescale", False, "'do_rescale' must be True"),
    ("do_normalize", False, "'do_normalize' must be True"),
    ("do_convert_rgb", False, "'do_convert_rgb' must be True"),
    ("rescale_factor", 0.5, "'rescale_factor' must be 0.00392"),
    ("resample", 2, "'resample' must be 3"),
    ("default_to_square", True, "'default_to_square' must be False"),
    ("image_processor_type", "Qwen2VLImageProcessor", "'image_processor_type'"),
    ("processor_class", "Qwen2VLProcessor", "'processor_class'"),
    ("size", [1, 2], "'size' must be an object"),
    ("size", {"height": 10, "width": 10}, "'size' must resolve to exactly shortest_edge and longest_edge"),
]


@pytest.mark.parametrize(("key", "value", "message"), REFUSED, ids=[f"{k}={v!r}" for k, v, _ in REFUSED])
def test_a_value_not_implemented_is_refused_by_name(key, value, message):
    with pytest.raises(mmf.SpecError, match="preprocessor_config.json: ") as e:
        resolve(CONFIG, {**PREPROCESSOR, key: value})
    assert message in str(e.value)


def test_a_bad_spec_value_is_named_as_the_spec_field():
    with pytest.raises(mmf.SpecError, match="glm4v spec: field 'patch_size'"):
        resolve(CONFIG, {**PREPROCESSOR, "patch_size": 0})


@pytest.mark.parametrize(("key", "value"), [("patch_size", 16), ("spatial_merge_size", 4), ("temporal_patch_size", 1)])
def test_the_vision_tower_must_agree(key, value):
    cfg = {**CONFIG, "vision_config": {**VISION, key: value}}
    with pytest.raises(mmf.SpecError, match=rf"config.json: vision_config.{key}={value} disagrees"):
        resolve(cfg, PREPROCESSOR)
    with pytest.raises(mmf.SpecError, match="'vision_config' must be an object"):
        resolve({**CONFIG, "vision_config": 3}, PREPROCESSOR)


def test_the_key_set_is_what_transformers_writes():
    """What save_pretrained writes for the PIL classes (and the torchvision ones where they import)."""
    transformers = pytest.importorskip("transformers")
    classes = [transformers.Glm4vImageProcessorPil, transformers.Glm46VImageProcessorPil]
    if importlib.util.find_spec("torchvision") is not None:
        classes += [transformers.Glm4vImageProcessor, transformers.Glm46VImageProcessor]
    for cls in classes:
        written = json.loads(cls().to_json_string())
        assert set(written) <= KNOWN, set(written) - KNOWN
        # No video config: the video processor reads this file too (AutoVideoProcessor).
        assert resolve(CONFIG, written) == {**mmf.preset("glm4_1v_9b_thinking"), "max_pixels": 28 * 28 * 15000,
                                            "video_max_pixels": 28 * 28 * 15000}


def test_min_and_max_pixels_do_not_change_the_reference():
    """The reason they are refused: the class takes them without effect on size."""
    transformers = pytest.importorskip("transformers")
    ip = transformers.Glm4vImageProcessorPil(**{**GLM4V, "min_pixels": 784, "max_pixels": 200704})
    assert (ip.size["shortest_edge"], ip.size["longest_edge"]) == (12544, 9633792)


# -- video_preprocessor_config.json ----------------------------------------------------


def test_video_fields_follow_the_video_config():
    doc = {**VIDEO, "size": {"shortest_edge": 784, "longest_edge": 100000}, "fps": 3, "max_duration": 60}
    spec = resolve({**CONFIG, "video_token_id": 9}, GLM4V, doc)
    got = {k: spec[k] for k in ("video_token_id", "video_min_pixels", "video_max_pixels", "video_fps",
                                "video_max_duration", "video_variant")}
    assert got == {"video_token_id": 9, "video_min_pixels": 784, "video_max_pixels": 100000, "video_fps": 3.0,
                   "video_max_duration": 60, "video_variant": "glm4v"}
    assert "video_timestamp_ids" not in spec or spec["video_timestamp_ids"] is None
    assert spec["video_sample_frames"] is True
    # do_sample_frames off: every frame given (mm_framework.hf's video adapter samples itself).
    assert resolve(CONFIG, GLM4V, {**VIDEO, "do_sample_frames": False})["video_sample_frames"] is False


def test_without_a_video_config_the_preprocessor_config_is_the_source():
    # AutoVideoProcessor builds the video processor from preprocessor_config.json then.
    spec = resolve(CONFIG, GLM4V)
    assert (spec["video_min_pixels"], spec["video_max_pixels"]) == (12544, 9633792)
    assert resolve(CONFIG, PREPROCESSOR)["video_variant"] == "glm46v"


def test_the_video_processor_class_names_the_variant():
    assert resolve(CONFIG, {}, {**VIDEO, "video_processor_type": "Glm46VVideoProcessor",
                                "processor_class": None})["video_variant"] == "glm46v"
    assert resolve({**CONFIG, "model_type": "glm46v"}, {}, None)["video_variant"] == "glm46v"


VIDEO_REFUSED = [
    ("do_sample_frames", "yes", "'do_sample_frames' must be a boolean"),
    ("resample", 2, "'resample' must be 3"),
    ("video_processor_type", "Qwen2VLVideoProcessor", "'video_processor_type' must be one of"),
    ("processor_class", "Glm46VProcessor", "different GLM generations"),
    ("patch_size", 16, "'patch_size' is 16 for video but 14 for images"),
    ("image_mean", [0.5] * 3, "'image_mean' is"),
    ("size", {"longest_edge": 100000}, "'size' must hold exactly shortest_edge and longest_edge"),
    ("device", "cpu", "'device' is not supported for video by the glm4v family"),
    ("fps", 0, "video_fps"),
    ("max_duration", -1, "video_max_duration"),
]


@pytest.mark.parametrize(("key", "value", "message"), VIDEO_REFUSED, ids=[r[0] for r in VIDEO_REFUSED])
def test_video_values_not_implemented_are_refused(key, value, message):
    with pytest.raises(mmf.SpecError, match=re.escape(message)):
        resolve(CONFIG, GLM4V, {**VIDEO, key: value})


@pytest.mark.parametrize("cls", ["Glm4vVideoProcessor", "Glm46VVideoProcessor"])
def test_every_key_the_video_processors_write_is_consumed(cls):
    pytest.importorskip("torchvision")
    transformers = pytest.importorskip("transformers")
    written = json.loads(getattr(transformers, cls)().to_json_string())
    assert set(written) <= VIDEO_KNOWN, set(written) - VIDEO_KNOWN
    spec = resolve(CONFIG if cls == "Glm4vVideoProcessor" else {**CONFIG, "model_type": "glm46v"}, {}, written)
    assert spec["video_variant"] == ("glm4v" if cls == "Glm4vVideoProcessor" else "glm46v")
