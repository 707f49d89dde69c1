"""``spec_from_hf_configs``: transformers 5.24's PaddleOCR-VL files resolve to the preset;
every preprocessor key is consumed, and every value not implemented is refused by name."""

from __future__ import annotations

import importlib.util
import json

import pytest

import mm_framework as mmf
from paddleocr_vl_plugin.hf_config import KNOWN, resolve

# What transformers writes: PaddleOCRVLImageProcessor().to_dict() (the key set is checked
# against the live class below) and PaddleOCRVLConfig's ids and vision sizes.
PREPROCESSOR = {
    "size": {"longest_edge": 2359296, "shortest_edge": 147456}, "do_convert_rgb": True, "do_resize": True,
    "resample": 3, "do_rescale": True, "rescale_factor": 0.00392156862745098, "do_normalize": True,
    "patch_size": 14, "temporal_patch_size": 1, "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "PaddleOCRVLImageProcessor", "processor_class": "PaddleOCRVLProcessor",
}
CONFIG = {"model_type": "paddleocr_vl", "image_token_id": 100295,
          "vision_config": {"patch_size": 14, "spatial_merge_size": 2, "image_size": 384}}
PRESET = mmf.preset("paddleocr_vl")


def test_the_configs_give_the_preset():
    assert mmf.spec_from_hf_configs(CONFIG, PREPROCESSOR) == PRESET


def test_other_models_are_not_claimed():
    assert resolve({"model_type": "qwen2_vl"}, PREPROCESSOR) is None
    assert resolve([], PREPROCESSOR) is None


def test_missing_keys_take_transformers_defaults():
    assert resolve({"model_type": "paddleocr_vl"}, {}) == PRESET


def test_min_and_max_pixels_override_size_like_the_processor():
    transformers = pytest.importorskip("transformers")
    for pp in ({"min_pixels": 784, "max_pixels": 200704}, {"size": {"shortest_edge": 784, "longest_edge": 10**6}},
               {"size": {"shortest_edge": 784, "longest_edge": 10**6}, "max_pixels": 200704},
               {"min_pixels": None, "max_pixels": 200704}):
        spec = resolve(CONFIG, {**PREPROCESSOR, **pp})
        ip = transformers.PaddleOCRVLImageProcessorPil(**{**PREPROCESSOR, **pp})
        assert (spec["min_pixels"], spec["max_pixels"]) == (ip.size["shortest_edge"], ip.size["longest_edge"]), pp


def test_the_files_fields_are_followed():
    pp = {**PREPROCESSOR, "patch_size": 16, "merge_size": 1, "temporal_patch_size": 2, "image_mean": [0.5] * 3}
    spec = resolve({"model_type": "paddleocr_vl", "image_token_id": 7,
                    "vision_config": {"patch_size": 16, "spatial_merge_size": 1}}, pp)
    got = (spec["image_token_id"], spec["patch_size"], spec["merge_size"], spec["temporal_patch_size"])
    assert got == (7, 16, 1, 2)
    assert spec["image_mean"] == [0.5] * 3


REFUSED = [
    ("not_a_key", 1, "'not_a_key' is not supported by the paddleocr_vl family"),
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
    with pytest.raises(mmf.SpecError, match="paddleocr_vl spec: field 'patch_size'"):
        resolve(CONFIG, {**PREPROCESSOR, "patch_size": 0})


@pytest.mark.parametrize(("key", "value"), [("patch_size", 16), ("spatial_merge_size", 4)])
def test_the_vision_tower_must_agree(key, value):
    cfg = {**CONFIG, "vision_config": {**CONFIG["vision_config"], key: value}}
    with pytest.raises(mmf.SpecError, match=rf"config.json: vision_config.{key}={value} disagrees"):
        resolve(cfg, PREPROCESSOR)
    with pytest.raises(mmf.SpecError, match="'vision_config' must be an object"):
        resolve({**CONFIG, "vision_config": 3}, PREPROCESSOR)


def test_the_key_set_is_what_transformers_writes():
    """What save_pretrained writes for the PIL class (and the torchvision one where it imports)."""
    transformers = pytest.importorskip("transformers")
    classes = [transformers.PaddleOCRVLImageProcessorPil]
    if importlib.util.find_spec("torchvision") is not None:
        classes.append(transformers.PaddleOCRVLImageProcessor)
    for cls in classes:
        written = json.loads(cls().to_json_string())
        assert set(written) <= KNOWN, set(written) - KNOWN
        assert resolve(CONFIG, written) == PRESET
