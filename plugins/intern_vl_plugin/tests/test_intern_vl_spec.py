"""Spec validation: every field checked, every failure a SpecError naming the field."""

from __future__ import annotations

import json
import re

import pytest

import mm_framework as mmf
from intern_vl_plugin.spec import PRESETS, REQUIRED, parse_spec

BASE = {
    "image_token_id": 1,
    "img_context_token_id": 2,
    "img_start_token_id": 3,
    "img_end_token_id": 4,
    "image_size": 16,
    "num_image_token": 4,
    "max_num": 12,
    "image_mean": [0.485, 0.456, 0.406],
    "image_std": [0.229, 0.224, 0.225],
}


def test_defaults_and_roundtrip():
    spec = parse_spec(BASE)
    assert spec.use_thumbnail is True and spec.processor == "sglang" and spec.backend == "pil"
    assert spec.to_dict() == {"family": "intern_vl", **BASE, "use_thumbnail": True, "processor": "sglang",
                              "backend": "pil"}
    assert parse_spec({k: v for k, v in spec.to_dict().items() if k != "family"}) == spec


def test_preset_is_registered_and_valid():
    preset = mmf.preset("internvl2_5_8b")
    assert preset == PRESETS["internvl2_5_8b"]
    assert preset["family"] == "intern_vl"
    assert (preset["img_start_token_id"], preset["img_end_token_id"], preset["img_context_token_id"]) == (
        92544,
        92545,
        92546,
    )
    assert preset["image_token_id"] == preset["img_context_token_id"]
    assert (preset["image_size"], preset["num_image_token"], preset["max_num"]) == (448, 256, 12)
    pipe = mmf.pipeline_from_spec(json.dumps(preset))
    assert pipe.num_media_tokens(640, 480) == 13 * 256


def test_remote_code_configs_are_not_claimed():
    # Only the -hf checkpoints (model_type "internvl") resolve (test_intern_vl_transformers.py);
    # the remote-code ones are SGLang's to load and carry no processor config.
    with pytest.raises(mmf.SpecError, match="no installed family handles model_type 'internvl_chat'"):
        mmf.spec_from_hf_configs({"model_type": "internvl_chat"}, {})


@pytest.mark.parametrize("field", list(REQUIRED))
def test_missing_required_field(field):
    with pytest.raises(mmf.SpecError, match=f"missing required field '{field}'"):
        parse_spec({k: v for k, v in BASE.items() if k != field})


def test_unknown_field():
    with pytest.raises(mmf.SpecError, match="unknown field 'max_tiles'"):
        parse_spec({**BASE, "max_tiles": 6})


def test_not_a_mapping():
    with pytest.raises(mmf.SpecError, match="expected an object"):
        parse_spec([1, 2])


BAD = [
    ("image_token_id", -1, "must be >= 0"),
    ("img_context_token_id", True, "must be an integer"),
    ("img_start_token_id", 1.0, "must be an integer"),
    ("img_end_token_id", 1 << 63, "must fit in int64"),
    ("image_size", 0, "must be greater than zero"),
    ("num_image_token", 0, "must be greater than zero"),
    ("max_num", -3, "must be greater than zero"),
    ("max_num", "12", "must be an integer"),
    ("max_num", 1025, "must be <= 1024"),
    ("image_mean", [0.5, 0.5], "must be a list of 3 numbers"),
    ("image_mean", "0.5", "must be a list of 3 numbers"),
    ("image_mean", [0.5, float("nan"), 0.5], "3 finite numbers"),
    ("image_mean", [0.5, float("inf"), 0.5], "3 finite numbers"),
    ("image_mean", [0.5, 10**400, 0.5], "3 finite numbers"),
    ("image_mean", [0.5, 1e39, 0.5], "float32 range"),
    ("image_mean", [0.5, True, 0.5], "3 finite numbers"),
    ("image_std", [0.2, 0, 0.2], "must not contain 0"),
    ("image_std", [0.2, 1e-50, 0.2], "must not contain 0"),
    ("use_thumbnail", 1, "must be true or false"),
    ("use_thumbnail", "true", "must be true or false"),
    ("processor", "hf", "must be one of"),
    ("processor", None, "must be one of"),
    ("backend", "numpy", "must be one of 'pil', 'torchvision'"),
]


@pytest.mark.parametrize("field, value, message", BAD)
def test_bad_values_name_the_field(field, value, message):
    with pytest.raises(mmf.SpecError, match=f"intern_vl spec: field '{field}' .*{re.escape(message)}"):
        parse_spec({**BASE, field: value})


def test_through_the_public_entry_point():
    with pytest.raises(mmf.SpecError, match="field 'image_size'"):
        mmf.pipeline_from_spec({"family": "intern_vl", **BASE, "image_size": -16})


# (changes, the field the error names, the other field its message names)
CROSS = [
    # The model scatters features where ids equal <IMG_CONTEXT>; the markers must be other ids.
    ({"img_start_token_id": 2}, "img_start_token_id", "img_context_token_id"),
    ({"img_end_token_id": 2}, "img_end_token_id", "img_context_token_id"),
    ({"img_end_token_id": 3}, "img_end_token_id", "img_start_token_id"),
    # num_image_token = (image_size // patch)**2 * downsample**2: at most one per tile pixel.
    ({"num_image_token": 257}, "num_image_token", "image_size**2 = 256"),
    # 12 tiles of 4096 x 4096 = 201326592 pixels, above the core's decode bound.
    ({"image_size": 4096}, "max_num", "image_size"),
    ({"image_size": 448, "max_num": 1024}, "max_num", "image_size"),
    # GotOcr2ImageProcessor always appends the thumbnail.
    ({"processor": "transformers", "use_thumbnail": False}, "use_thumbnail", "'transformers'"),
    # SGLang's processor has one arithmetic; the image backend is transformers' choice.
    ({"backend": "torchvision"}, "backend", "processor 'transformers'"),
]


@pytest.mark.parametrize(("changes", "field", "other"), CROSS, ids=[str(c) for c, _, _ in CROSS])
def test_inconsistent_fields_are_refused_naming_both(changes, field, other):
    with pytest.raises(mmf.SpecError) as e:
        parse_spec({**BASE, **changes})
    message = str(e.value)
    assert message.startswith(f"intern_vl spec: field '{field}' ") and other in message, message


def test_the_edges_of_the_cross_rules_are_accepted():
    assert parse_spec({**BASE, "processor": "transformers", "backend": "torchvision"}).backend == "torchvision"
    # The prompt slot may be <IMG_CONTEXT> itself (the preset's choice, as in SGLang).
    assert parse_spec({**BASE, "image_token_id": 2}).image_token_id == 2
    # The published maximum of 40 tiles at 448 pixels, and a canvas right at the bound.
    assert parse_spec({**BASE, "image_size": 448, "max_num": 40}).max_num == 40
    assert parse_spec({**BASE, "image_size": 448, "max_num": 891}).max_num == 891
    assert parse_spec({**BASE, "num_image_token": 256}).num_image_token == 256
