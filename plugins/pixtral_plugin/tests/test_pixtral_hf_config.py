"""``spec_from_hf_configs`` on the published configurations, and each refusal by name."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import mm_framework as mmf
from pixtral_plugin import spec_from_hf_configs as resolve

MODELS = Path(__file__).parent / "golden" / "models"


def load(preset: str, name: str) -> dict:
    return json.loads((MODELS / preset / name).read_text())


CFG = {p: load(p, "config.json") for p in ("pixtral_12b", "mistral_small_3_1")}
PP = {p: load(p, "preprocessor_config.json") for p in CFG}


@pytest.mark.parametrize("preset", sorted(CFG))
def test_published_configs_resolve_to_the_presets(preset):
    assert resolve(CFG[preset], PP[preset]) == mmf.preset(preset)
    assert mmf.spec_from_hf_configs(CFG[preset], PP[preset]) == mmf.preset(preset)
    assert mmf.spec_from_model_dir(MODELS / preset) == mmf.preset(preset)


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "qwen2_vl"},
        {"model_type": "llava", "vision_config": {"model_type": "clip_vision_model"}},
        {"model_type": "llava"},
        {"model_type": "llava", "vision_config": "pixtral"},
        "not a mapping",
    ],
)
def test_other_models_are_not_ours(config):
    assert resolve(config, PP["pixtral_12b"]) is None


def test_missing_keys_take_the_class_defaults():
    spec = resolve({"model_type": "llava", "image_token_index": 10, "vision_config": {"model_type": "pixtral"}}, {})
    assert spec == mmf.preset("pixtral_12b")
    spec = resolve({"model_type": "mistral3"}, {"patch_size": 14, "size": {"longest_edge": 1540}})
    assert spec == mmf.preset("mistral_small_3_1")


def test_a_pixtral_vision_config_has_no_merge():
    """model_type ``pixtral`` (the vision tower, which transformers pairs with the bare image
    processor): sides in multiples of the preprocessor's own patch_size, [IMG] from Mistral's table."""
    spec = resolve({"model_type": "pixtral", "patch_size": 14}, PP["mistral_small_3_1"])
    assert spec == {**mmf.preset("mistral_small_3_1"), "spatial_merge_size": 1}
    assert resolve({"model_type": "pixtral"}, {}) == mmf.preset("pixtral_12b")
    with pytest.raises(mmf.SpecError, match=r"config.json: 'patch_size' =16 disagrees with the preprocessor's "
                                            r"patch_size=14"):
        resolve({"model_type": "pixtral", "patch_size": 16}, PP["mistral_small_3_1"])


def test_mistral3_accepts_the_image_token_id_alias():
    cfg = {k: v for k, v in CFG["mistral_small_3_1"].items() if k != "image_token_index"}
    assert resolve({**cfg, "image_token_id": 11}, PP["mistral_small_3_1"])["image_token_id"] == 11


def pp_rejected(changes: dict, key: str, preset: str = "mistral_small_3_1", match: str | None = None):
    pp = {**PP[preset], **changes}
    with pytest.raises(mmf.SpecError, match=match) as e:
        resolve(CFG[preset], pp)
    assert str(e.value).startswith(f"preprocessor_config.json: {key!r}"), str(e.value)


@pytest.mark.parametrize(
    "key", ["do_resize", "do_rescale", "do_normalize", "do_convert_rgb", "do_pad", "default_to_square"]
)
@pytest.mark.parametrize("value", [False, 1, None])
def test_pinned_flags(key, value):
    pp_rejected({key: value}, key, match="only value implemented")


@pytest.mark.parametrize(
    "key,value", [("resample", 2), ("resample", 3.0), ("rescale_factor", 1 / 256), ("rescale_factor", 1)]
)
def test_pinned_values(key, value):
    pp_rejected({key: value}, key, match="only value implemented")


@pytest.mark.parametrize(
    "key,value",
    [("data_format", "channels_last"), ("input_data_format", "channels_first"), ("device", "cpu"),
     ("return_tensors", "pt"), ("do_center_crop", True), ("crop_size", {"height": 8, "width": 8}),
     ("disable_grouping", True), ("pad_size", {"height": 64, "width": 64}), ("image_seq_length", 5)],
)
def test_inert_keys_only_at_their_inert_value(key, value):
    pp_rejected({key: value}, key, match="without effect")


@pytest.mark.parametrize("key", ["max_image_size", "merge_size", "longest_edge"])
def test_unknown_key(key):
    pp_rejected({key: 1}, key, match="not supported by the pixtral family")


@pytest.mark.parametrize(
    "key,value", [("image_processor_type", "CLIPImageProcessor"), ("processor_class", "LlavaProcessor")]
)
def test_foreign_classes(key, value):
    pp_rejected({key: value}, key, match="must be one of")


@pytest.mark.parametrize(
    "value", [{"height": 14, "width": 16}, {"height": 14}, {"height": 14, "width": 14, "x": 1}]
)
def test_non_square_patch(value):
    pp_rejected({"patch_size": value}, "patch_size", match="square")


@pytest.mark.parametrize("value", [{"height": 1540, "width": 1540}, {"longest_edge": 1540, "shortest_edge": 14}, 1540])
def test_size_forms(value):
    pp_rejected({"size": value}, "size", match="longest_edge")


def test_bad_values_reach_the_spec_check():
    with pytest.raises(mmf.SpecError, match="field 'image_std'"):
        resolve(CFG["pixtral_12b"], {**PP["pixtral_12b"], "image_std": [0.2, 0, 0.2]})
    with pytest.raises(mmf.SpecError, match="field 'longest_edge'"):
        resolve(CFG["pixtral_12b"], {**PP["pixtral_12b"], "size": {"longest_edge": 0}})


def test_vision_patch_size_must_agree():
    cfg = copy.deepcopy(CFG["pixtral_12b"])
    cfg["vision_config"]["patch_size"] = 14
    with pytest.raises(mmf.SpecError, match=r"config.json: 'vision_config.patch_size'.*disagrees"):
        resolve(cfg, PP["pixtral_12b"])


def test_vision_config_must_be_an_object():
    with pytest.raises(mmf.SpecError, match="'vision_config' must be an object"):
        resolve({"model_type": "mistral3", "vision_config": [14]}, PP["mistral_small_3_1"])


def test_llava_needs_its_image_token_index():
    cfg = {k: v for k, v in CFG["pixtral_12b"].items() if k != "image_token_index"}
    with pytest.raises(mmf.SpecError, match="'image_token_index' is required"):
        resolve(cfg, PP["pixtral_12b"])


def test_bad_token_and_merge_values_are_refused():
    with pytest.raises(mmf.SpecError, match="field 'image_token_id'"):
        resolve({**CFG["mistral_small_3_1"], "image_token_index": -1}, PP["mistral_small_3_1"])
    with pytest.raises(mmf.SpecError, match="must differ from 'image_token_id', both are 12"):
        resolve({**CFG["mistral_small_3_1"], "image_token_index": 12}, PP["mistral_small_3_1"])
    with pytest.raises(mmf.SpecError, match="field 'spatial_merge_size'"):
        resolve({**CFG["mistral_small_3_1"], "spatial_merge_size": 0}, PP["mistral_small_3_1"])


def test_preprocessor_config_must_be_an_object():
    with pytest.raises(mmf.SpecError, match="expected an object"):
        resolve(CFG["pixtral_12b"], ["size"])
