"""spec_from_hf_configs / spec_from_model_dir: conservative resolution of real Qwen-VL configs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import mm_framework as mmf

MODELS = Path(__file__).parent / "golden" / "models"


def configs(model: str) -> tuple[dict, dict]:
    names = ("config.json", "preprocessor_config.json")
    return tuple(json.loads((MODELS / model / name).read_text()) for name in names)


@pytest.mark.parametrize(
    ("model", "preset"),
    [
        ("qwen2_vl_defaults", "qwen2_vl_class_defaults"),
        ("qwen2_vl_instruct", "qwen2_vl"),
        ("qwen2_5_vl_instruct", "qwen2_5_vl"),
        ("qwen3_vl_instruct", "qwen3_vl"),
        ("qwen3_5", "qwen3_5"),
    ],
)
def test_model_dirs_resolve_to_the_presets(model, preset):
    assert mmf.spec_from_model_dir(MODELS / model) == mmf.preset(preset)


def test_qwen2_vl_instruct_uses_its_published_pixel_budget():
    # Its video processor reads preprocessor_config.json too: the same bounds per frame.
    spec = mmf.spec_from_model_dir(MODELS / "qwen2_vl_instruct")
    assert spec == {**mmf.preset("qwen2_vl_class_defaults"), "max_pixels": 12845056, "video_min_pixels": 3136,
                    "video_max_pixels": 12845056} == mmf.preset("qwen2_vl")


@pytest.mark.parametrize("model_type", ["qwen3_vl_moe", "qwen3_5_moe"])
def test_moe_model_types_are_handled(model_type):
    config, pp = configs("qwen3_5" if model_type == "qwen3_5_moe" else "qwen3_vl_instruct")
    config = {**config, "model_type": model_type}
    assert mmf.spec_from_hf_configs(config, pp)["patch_size"] == 16


def test_missing_image_token_id_takes_the_config_class_default():
    for model, default in (("qwen2_5_vl_instruct", 151655), ("qwen3_5", 248056)):
        config, pp = configs(model)
        del config["image_token_id"]
        assert mmf.spec_from_hf_configs(config, pp)["image_token_id"] == default


def test_full_5x_style_preprocessor_config_with_pinned_keys():
    _, pp = configs("qwen3_vl_instruct")
    pp.update(do_resize=True, do_rescale=True, do_normalize=True, do_convert_rgb=True,
              rescale_factor=0.00392156862745098, resample=3)
    config, _ = configs("qwen3_vl_instruct")
    video = json.loads((MODELS / "qwen3_vl_instruct" / "video_preprocessor_config.json").read_text())
    assert mmf.spec_from_hf_configs(config, pp, video) == mmf.preset("qwen3_vl")


def test_top_level_pixels_override_size_and_its_legacy_keys():
    config, pp = configs("qwen2_5_vl_instruct")
    pp["size"] = {"min_pixels": 1, "max_pixels": 2}
    assert mmf.spec_from_hf_configs(config, pp) == mmf.preset("qwen2_5_vl")
    pp = {**pp, "size": {"shortest_edge": 1000, "longest_edge": 2000}}
    del pp["min_pixels"]
    assert mmf.spec_from_hf_configs(config, pp)["min_pixels"] == 1000
    assert mmf.spec_from_hf_configs(config, pp)["max_pixels"] == 12845056


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("do_resize", False),
        ("do_rescale", False),
        ("do_normalize", False),
        ("do_convert_rgb", False),
        ("rescale_factor", 1 / 256),
        ("rescale_factor", 0.0039215686),
        ("resample", 2),
        ("resample", True),
        ("do_resize", 1),
        ("image_processor_type", "SiglipImageProcessor"),
        ("processor_class", "LlavaProcessor"),
        ("do_center_crop", False),
        ("crop_size", {"height": 224, "width": 224}),
        ("auto_map", {"AutoImageProcessor": "x.Y"}),
        ("size", {"height": 448, "width": 448}),
        ("size", [448, 448]),
    ],
)
def test_unsupported_preprocessor_key_or_value_is_named(key, value):
    config, pp = configs("qwen3_vl_instruct")
    pp[key] = value
    with pytest.raises(mmf.SpecError, match=f"'{key}'"):
        mmf.spec_from_hf_configs(config, pp)


def test_legacy_size_without_top_level_pixels_is_refused():
    config, pp = configs("qwen2_vl_instruct")
    del pp["min_pixels"], pp["max_pixels"]
    pp["size"] = {"min_pixels": 3136, "max_pixels": 12845056}
    with pytest.raises(mmf.SpecError, match="'size'"):
        mmf.spec_from_hf_configs(config, pp)


@pytest.mark.parametrize(("key", "field"), [("patch_size", "patch_size"), ("merge_size", "merge_size"),
                                            ("image_mean", "image_mean"), ("min_pixels", "min_pixels")])
def test_bad_values_name_the_field(key, field):
    config, pp = configs("qwen2_5_vl_instruct")
    pp[key] = "bad"
    with pytest.raises(mmf.SpecError, match=f"'{field}'"):
        mmf.spec_from_hf_configs(config, pp)


def test_vision_config_must_agree_with_the_preprocessor():
    config, pp = configs("qwen3_vl_instruct")
    pp["patch_size"] = 14
    with pytest.raises(mmf.SpecError, match="vision_config.patch_size"):
        mmf.spec_from_hf_configs(config, pp)
    config, pp = configs("qwen2_vl_instruct")
    config["vision_config"]["spatial_merge_size"] = 4
    with pytest.raises(mmf.SpecError, match="vision_config.spatial_merge_size"):
        mmf.spec_from_hf_configs(config, pp)


def test_other_model_types_are_not_ours():
    _, pp = configs("qwen2_vl_instruct")
    with pytest.raises(mmf.SpecError, match="no installed family handles model_type 'llava'"):
        mmf.spec_from_hf_configs({"model_type": "llava"}, pp)


def test_model_dir_errors(tmp_path):
    with pytest.raises(mmf.SpecError, match="config.json"):
        mmf.spec_from_model_dir(tmp_path)
    for name in ("config.json", "preprocessor_config.json"):
        (tmp_path / name).write_text((MODELS / "qwen3_5" / name).read_text())
    # Without its video config, transformers' video processor reads preprocessor_config.json.
    fallback = {**mmf.preset("qwen3_5"), "video_min_pixels": 65536, "video_max_pixels": 16777216}
    assert mmf.spec_from_model_dir(tmp_path) == fallback
    video_config = (MODELS / "qwen3_5" / "video_preprocessor_config.json").read_text()
    (tmp_path / "video_preprocessor_config.json").write_text(video_config)
    assert mmf.spec_from_model_dir(tmp_path) == mmf.preset("qwen3_5")
    (tmp_path / "preprocessor_config.json").write_text("{not json")
    with pytest.raises(mmf.SpecError, match="invalid JSON"):
        mmf.spec_from_model_dir(tmp_path)


def test_inputs_are_not_mutated():
    config, pp = configs("qwen2_5_vl_instruct")
    before = copy.deepcopy((config, pp))
    mmf.spec_from_hf_configs(config, pp)
    assert (config, pp) == before
