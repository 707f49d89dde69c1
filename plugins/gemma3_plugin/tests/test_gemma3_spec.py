"""Spec validation: every field checked, every failure a SpecError naming the field."""

from __future__ import annotations

import json

import pytest

import mm_framework as mmf
from gemma3_plugin.spec import DEFAULTS, PRESETS, REQUIRED, parse_spec

BASE = {k: v for k, v in PRESETS["gemma3_4b_it"].items() if k in REQUIRED}


def test_defaults_and_roundtrip():
    spec = parse_spec(BASE)
    assert spec.to_dict() == {"family": "gemma3", **BASE, **DEFAULTS}
    assert parse_spec({k: v for k, v in spec.to_dict().items() if k != "family"}) == spec


def test_presets_are_the_published_checkpoint():
    it = mmf.preset("gemma3_4b_it")
    assert it == PRESETS["gemma3_4b_it"]
    assert (it["image_token_id"], it["boi_token_id"], it["eoi_token_id"]) == (262144, 255999, 256000)
    assert (it["height"], it["width"], it["image_seq_length"], it["resample"]) == (896, 896, 256, "pil_bilinear")
    assert (it["image_mean"], it["image_std"], it["rescale_factor"]) == ([0.5] * 3, [0.5] * 3, 1 / 255)
    pas = mmf.preset("gemma3_4b_it_pan_and_scan")
    assert {k for k in pas if pas[k] != it[k]} == {"do_pan_and_scan"}
    assert mmf.pipeline_from_spec(json.dumps(it)).num_media_tokens(1280, 960) == 256
    # 1280x960 gets two 640x960 crops: 3 soft runs and the markers and prose between them.
    assert mmf.pipeline_from_spec(pas).num_media_tokens(1280, 960) == 3 * 256 + (2 + 11 + 2) + (2 + 1 + 2)


@pytest.mark.parametrize("field", REQUIRED)
def test_missing_required_field(field):
    with pytest.raises(mmf.SpecError, match=f"missing required field '{field}'"):
        parse_spec({k: v for k, v in BASE.items() if k != field})


def test_unknown_field():
    with pytest.raises(mmf.SpecError, match="unknown field 'pan_and_scan'"):
        parse_spec({**BASE, "pan_and_scan": True})


BAD_VALUES = [
    ("image_token_id", -1, "must be >= 0"),
    ("image_token_id", 2**31, "must be <= 2147483647"),
    ("image_token_id", "262144", "must be an integer"),
    ("boi_token_id", True, "must be an integer"),
    ("eoi_token_id", 1.5, "must be an integer"),
    ("image_seq_length", 0, "must be greater than zero"),
    ("image_seq_length", 1 << 17, "must be <= 65536"),
    ("height", 0, "must be greater than zero"),
    ("height", 4097, "must be <= 4096"),
    ("width", None, "must be an integer"),
    ("rescale_factor", 0, "must be finite and greater than zero"),
    ("rescale_factor", float("nan"), "must be finite"),
    ("image_mean", [0.5, 0.5], "must be a list of 3 numbers"),
    ("image_std", [0.5, 0.0, 0.5], "must not contain 0"),
    ("resample", "pil_nearest", "must be one of 'pil_bilinear', 'pil_bicubic', 'pil_lanczos'"),
    ("resample", 2, "must be one of"),
    ("backend", "numpy", "must be one of 'pil', 'torchvision'"),
    ("do_rescale", 1, "must be true or false"),
    ("do_normalize", "yes", "must be true or false"),
    ("do_pan_and_scan", None, "must be true or false"),
    ("pan_and_scan_min_crop_size", 0, "must be greater than zero"),
    ("pan_and_scan_max_num_crops", 0, "must be greater than zero"),
    ("pan_and_scan_max_num_crops", 65, "must be <= 64"),
    ("pan_and_scan_min_ratio_to_activate", 0, "must be finite and greater than zero"),
    ("pan_and_scan_min_ratio_to_activate", float("inf"), "must be finite"),
    ("newline_token_id", -5, "must be >= 0"),
    ("newline_run_max", 1, "must be >= 2"),
    ("newline_run_max", 1025, "must be <= 1024"),
    ("pan_and_scan_intro_ids", [], "must be a non-empty list of token ids"),
    ("pan_and_scan_crops_ids", "abc", "must be a non-empty list of token ids"),
    ("pan_and_scan_separator_ids", [1, -2], "must hold token ids in 0..2147483647"),
    ("pan_and_scan_separator_ids", [True], "must hold token ids"),
    ("alpha", "keep", "must be one of 'composite', 'drop'"),
    ("exif_transpose", 0, "must be true or false"),
    ("pixels", "u8", "must be one of 'f32', 'bf16'"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD_VALUES, ids=[f"{f}={v!r}" for f, v, _ in BAD_VALUES])
def test_bad_value_names_the_field(field, value, message):
    with pytest.raises(mmf.SpecError, match=f"gemma3 spec: field '{field}' {message}"):
        parse_spec({**BASE, field: value})


def test_every_field_has_a_rejection_test():
    assert {f for f, _, _ in BAD_VALUES} | set(REQUIRED) == set(REQUIRED) | set(DEFAULTS)


# (change, the field the error names, the other fields its message names, message)
CROSS = [
    ({"do_rescale": False, "do_normalize": False}, "do_normalize", ["do_rescale"], "cannot both be false"),
    ({"eoi_token_id": 255999}, "eoi_token_id", ["boi_token_id"], "must differ"),
    ({"image_token_id": 255999}, "eoi_token_id", ["image_token_id"], "must differ"),
    ({"boi_token_id": 108}, "boi_token_id", ["newline_token_id"], "lies among the newline ids 107..137"),
    ({"newline_token_id": 262140}, "image_token_id", ["newline_run_max"], "lies among the newline ids"),
    ({"newline_token_id": 2**31 - 10}, "newline_run_max", ["newline_token_id"], "puts the newline ids .* past"),
    ({"pan_and_scan_intro_ids": [8291, 255999]}, "pan_and_scan_intro_ids", ["boi_token_id"], r"\[255999\]"),
    ({"pan_and_scan_crops_ids": [108]}, "pan_and_scan_crops_ids", ["newline_token_id"], r"must not .* \[108\]"),
    ({"pan_and_scan_separator_ids": [262144]}, "pan_and_scan_separator_ids", ["image_token_id"], "must not contain"),
    ({"height": 8, "width": 16}, "image_seq_length", ["height", "width"], r"must not exceed height \* width = 128"),
    (
        {"do_pan_and_scan": True, "height": 4096, "width": 4096, "pan_and_scan_max_num_crops": 10},
        "pan_and_scan_max_num_crops", ["height", "width"], "make 184549376 pixels per item, above the 178956970",
    ),
]


@pytest.mark.parametrize(("change", "field", "others", "message"), CROSS, ids=[str(c) for c, _, _, _ in CROSS])
def test_cross_field_rejections_name_both_fields(change, field, others, message):
    with pytest.raises(mmf.SpecError, match=f"gemma3 spec: field '{field}' .*{message}") as e:
        parse_spec({**BASE, **change})
    problem = str(e.value).split(f"field '{field}'", 1)[1]
    assert all(other in problem for other in others), str(e.value)


def test_limits_of_the_cross_rules_are_accepted():
    # One soft token per pixel, and a stack just at the decode bound, are still allowed;
    # without pan-and-scan the crop count allocates nothing.
    assert parse_spec({**BASE, "height": 16, "width": 16}).image_seq_length == 256
    big = {**BASE, "height": 4096, "width": 4096, "pan_and_scan_max_num_crops": 9}
    assert parse_spec({**big, "do_pan_and_scan": True}).pan_and_scan_max_num_crops == 9
    assert parse_spec({**big, "pan_and_scan_max_num_crops": 64}).do_pan_and_scan is False


def test_backend_picks_the_resizer_of_the_filter():
    assert parse_spec(BASE).resizer == "pil_bilinear"
    tv = {**BASE, "backend": "torchvision"}
    assert parse_spec(tv).resizer == "aten_u8_bilinear"
    assert parse_spec({**tv, "resample": "pil_bicubic"}).resizer == "aten_u8"
    assert parse_spec({**tv, "resample": "pil_lanczos"}).resizer == "aten_u8_lanczos"
    assert parse_spec({**BASE, "resample": "pil_lanczos"}).resizer == "pil_lanczos"


def test_rescale_or_normalize_alone_is_accepted():
    assert parse_spec({**BASE, "do_rescale": False}).do_rescale is False
    assert parse_spec({**BASE, "do_normalize": False}).do_normalize is False


def test_pipeline_rejects_through_the_factory():
    with pytest.raises(mmf.SpecError, match="gemma3 spec: field 'height'"):
        mmf.pipeline_from_spec({**PRESETS["gemma3_4b_it"], "height": -1})
