"""Spec validation of the llava_onevision family: the preset, and every rejection by name."""

from __future__ import annotations

import json
import re

import pytest

import mm_framework as mmf
from llava_onevision_plugin.spec import MAX_PINPOINT_PIXELS, ONEVISION_PINPOINTS, PRESETS, parse_spec

PRESET = "llava_onevision_qwen2_7b_ov"


def spec(**changes):
    s = {k: v for k, v in mmf.preset(PRESET).items() if k != "family"}
    s.update(changes)
    return s


def test_preset_is_the_published_checkpoint():
    p = mmf.preset(PRESET)
    assert p == PRESETS[PRESET]
    assert p["image_token_id"] == 151646 and p["image_size"] == 384 and p["num_image_tokens"] == 729
    assert p["image_mean"] == p["image_std"] == [0.5, 0.5, 0.5] and p["rescale_factor"] == 1 / 255
    assert p["resample"] == "pil_bicubic" and p["vision_feature_select_strategy"] == "full"
    assert p["vision_aspect_ratio"] == "anyres_max_9"
    assert p["image_grid_pinpoints"] == [[h, w] for h in range(384, 2305, 384) for w in range(384, 2305, 384)]
    assert p["backend"] == "pil" and p["alpha"] == "composite" and p["exif_transpose"] is False


def test_parse_round_trips_through_json():
    s = parse_spec(json.loads(json.dumps(spec())))
    assert s.to_dict() == mmf.preset(PRESET)
    assert s.image_grid_pinpoints == ONEVISION_PINPOINTS and s.max_num_patches == 9 and s.patches_per_side == 27


def test_optional_fields_default():
    s = spec()
    del s["backend"], s["alpha"], s["exif_transpose"]
    assert parse_spec(s).to_dict() == mmf.preset(PRESET)


def test_backends_choose_the_resizer():
    assert parse_spec(spec()).resizer == "pil_bicubic"
    assert parse_spec(spec(resample="pil_lanczos")).resizer == "pil_lanczos"
    tv = parse_spec(spec(backend="torchvision"))
    assert tv.resizer == "aten_u8" and tv.to_dict()["backend"] == "torchvision"


def test_torchvision_lanczos_is_refused_naming_both_fields():
    # transformers' torchvision backend resizes Lanczos with torchvision's own kernel, not cloned.
    with pytest.raises(mmf.SpecError, match=r"^llava_onevision spec: field 'backend' .*resample 'pil_lanczos'"):
        parse_spec(spec(backend="torchvision", resample="pil_lanczos"))


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("image_token_id", -1, "image_token_id"),
        ("image_token_id", 2**31, "image_token_id"),
        ("image_token_id", 1.0, "image_token_id"),
        ("image_token_id", True, "image_token_id"),
        ("image_size", 0, "image_size"),
        ("image_size", "384", "image_size"),
        ("image_grid_pinpoints", [], "image_grid_pinpoints"),
        ("image_grid_pinpoints", "384x384", "image_grid_pinpoints"),
        ("image_grid_pinpoints", [[384, 384], [384]], "image_grid_pinpoints.*entry 1"),
        ("image_grid_pinpoints", [[384, 384], 384], "image_grid_pinpoints.*entry 1"),
        ("image_grid_pinpoints", [[384, 0]], "image_grid_pinpoints.*entry 0"),
        ("image_grid_pinpoints", [[384, 384.0]], "image_grid_pinpoints.*entry 0"),
        ("image_grid_pinpoints", [[384, True]], "image_grid_pinpoints.*entry 0"),
        ("image_grid_pinpoints", [[384, 768], [336, 672]], "image_grid_pinpoints.*entry 1.*multiples of image_size"),
        ("image_grid_pinpoints", [[384, 384 * 40000]], "image_grid_pinpoints.*exceeds"),
        ("image_mean", [0.5, 0.5], "image_mean"),
        ("image_mean", [0.5, 0.5, float("nan")], "image_mean"),
        ("image_std", [0.5, 0.0, 0.5], "image_std"),
        ("image_std", 0.5, "image_std"),
        ("rescale_factor", 0, "rescale_factor"),
        ("rescale_factor", -1 / 255, "rescale_factor"),
        ("rescale_factor", float("inf"), "rescale_factor"),
        ("rescale_factor", "1/255", "rescale_factor"),
        ("resample", "aten_u8", "resample"),
        ("resample", "bilinear", "resample"),
        ("resample", 3, "resample"),
        ("num_image_tokens", 0, "num_image_tokens"),
        ("num_image_tokens", 730, "num_image_tokens.*perfect square"),
        ("num_image_tokens", 729.0, "num_image_tokens"),
        ("vision_feature_select_strategy", "cls_patch", "vision_feature_select_strategy"),
        ("vision_feature_select_strategy", None, "vision_feature_select_strategy"),
        ("vision_aspect_ratio", "anyres", "vision_aspect_ratio"),
        ("vision_aspect_ratio", "anyres_max_0", "vision_aspect_ratio"),
        ("vision_aspect_ratio", "anyres_max_09", "vision_aspect_ratio"),
        ("vision_aspect_ratio", "pad", "vision_aspect_ratio"),
        ("vision_aspect_ratio", 9, "vision_aspect_ratio"),
        ("backend", "torch", "backend"),
        ("backend", "PIL", "backend"),
        ("backend", None, "backend"),
        ("backend", 1, "backend"),
        ("alpha", "keep", "alpha"),
        ("exif_transpose", 1, "exif_transpose"),
    ],
)
def test_bad_field_is_rejected(field, value, match):
    with pytest.raises(mmf.SpecError, match=f"llava_onevision spec: field '{match}"):
        parse_spec(spec(**{field: value}))


def test_pinpoint_bound_is_the_default_pixel_limit():
    assert MAX_PINPOINT_PIXELS == mmf.Limits().max_image_pixels
    side = 384 * (int(MAX_PINPOINT_PIXELS**0.5) // 384)
    parse_spec(spec(image_grid_pinpoints=[[side, side]]))


@pytest.mark.parametrize(
    ("changes", "field", "other"),
    [
        # Pinpoints are cut into image_size crops; a pinpoint that is not a multiple contradicts it.
        ({"image_grid_pinpoints": [[384, 768], [336, 672]]}, "image_grid_pinpoints", "image_size 384"),
        # num_image_tokens = (crop side // vision patch)**2: at most one feature per crop pixel.
        ({"image_size": 16, "image_grid_pinpoints": [[16, 32]], "num_image_tokens": 289}, "num_image_tokens",
         "image_size**2 = 256"),
        ({"num_image_tokens": 385**2}, "num_image_tokens", "image_size**2 = 147456"),
    ],
)
def test_inconsistent_fields_are_refused_naming_both(changes, field, other):
    with pytest.raises(mmf.SpecError, match=rf"^llava_onevision spec: field '{field}' .*{re.escape(other)}"):
        parse_spec(spec(**changes))


def test_one_feature_per_pixel_is_accepted():
    s = parse_spec(spec(image_size=16, image_grid_pinpoints=[[16, 32]], num_image_tokens=256))
    assert s.patches_per_side == 16


def test_unknown_and_missing_fields_are_rejected():
    with pytest.raises(mmf.SpecError, match="unknown field 'image_aspect_ratio'"):
        parse_spec(spec(image_aspect_ratio="anyres_max_9"))
    s = spec()
    del s["num_image_tokens"]
    with pytest.raises(mmf.SpecError, match="missing required field 'num_image_tokens'"):
        parse_spec(s)
    with pytest.raises(mmf.SpecError, match="expected an object"):
        parse_spec([("image_size", 384)])


def test_pipeline_rejects_bad_spec_naming_the_field():
    with pytest.raises(mmf.SpecError, match="num_image_tokens"):
        mmf.pipeline_from_spec({**mmf.preset(PRESET), "num_image_tokens": 10})
