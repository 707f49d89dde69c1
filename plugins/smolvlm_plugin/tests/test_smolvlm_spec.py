"""Spec validation: every field checked, every failure a SpecError naming the field."""

from __future__ import annotations

import json

import pytest

import mm_framework as mmf
from smolvlm_plugin.spec import DEFAULTS, PRESETS, REQUIRED, parse_spec, row_col_table

BASE = {k: v for k, v in PRESETS["smolvlm_256m_instruct"].items() if k in REQUIRED}


def test_defaults_and_roundtrip():
    spec = parse_spec(BASE)
    assert spec.to_dict() == {"family": "smolvlm", **BASE, **DEFAULTS}
    assert parse_spec({k: v for k, v in spec.to_dict().items() if k != "family"}) == spec


def test_presets_are_the_published_checkpoints():
    smol, idefics = mmf.preset("smolvlm_256m_instruct"), mmf.preset("idefics3_8b_llama3")
    smol2 = mmf.preset("smolvlm2_500m_video_instruct")
    assert (smol["variant"], smol["size_longest_edge"], smol["max_image_size"], smol["image_seq_len"]) == (
        "idefics3", 2048, 512, 64)
    assert {k for k in smol2 if smol2[k] != smol[k]} == {"variant"} and smol2["variant"] == "smolvlm"
    assert (idefics["variant"], idefics["size_longest_edge"], idefics["max_image_size"], idefics["image_seq_len"]) == (
        "idefics3", 1456, 364, 169)
    for p in (smol, idefics):
        assert (p["resample"], p["image_mean"], p["image_std"], p["rescale_factor"]) == (
            "pil_lanczos", [0.5] * 3, [0.5] * 3, 1 / 255)
        assert p["do_image_splitting"] and p["do_resize"]
    assert (smol["image_token_id"], smol["fake_image_token_id"], smol["global_image_token_id"]) == (49190, 49189, 49152)
    assert smol["row_col_token_ids"][0][0] == 49153 and smol["row_col_token_ids"][5][5] == 49188
    assert idefics["image_token_id"] == 128257 and idefics["fake_image_token_id"] == 128256
    # 640x480 at 2048 is 2048x1536: a 3x4 grid of 512 tiles and the global image.
    assert mmf.pipeline_from_spec(json.dumps(smol)).num_media_tokens(640, 480) == 13 * 64 + 2 * 12 + 3


@pytest.mark.parametrize("field", REQUIRED)
def test_missing_required_field(field):
    with pytest.raises(mmf.SpecError, match=f"missing required field '{field}'"):
        parse_spec({k: v for k, v in BASE.items() if k != field})


def test_unknown_field():
    with pytest.raises(mmf.SpecError, match="unknown field 'size'"):
        parse_spec({**BASE, "size": {"longest_edge": 2048}})


BAD_VALUES = [
    ("variant", "smolvlm2", "must be one of 'smolvlm', 'idefics3'"),
    ("image_token_id", -1, "must be >= 0"),
    ("image_token_id", 2**31, "must be <= 2147483647"),
    ("fake_image_token_id", "49189", "must be an integer"),
    ("global_image_token_id", True, "must be an integer"),
    ("row_col_token_ids", [], "must be a non-empty list of rows of token ids"),
    ("row_col_token_ids", [1, 2], "must be a non-empty list of rows of token ids"),
    ("row_col_token_ids", [[1, 2], [3]], r"rows must be non-empty and of one length, got lengths \[1, 2\]"),
    ("row_col_token_ids", [[1, -2]], "must hold token ids in 0..2147483647"),
    ("newline_token_id", 1.5, "must be an integer"),
    ("double_newline_ids", [], "must be a non-empty list of token ids"),
    ("double_newline_ids", [False], "must hold token ids"),
    ("image_seq_len", 0, "must be greater than zero"),
    ("image_seq_len", 1 << 17, "must be <= 65536"),
    ("size_longest_edge", 0, "must be greater than zero"),
    ("size_longest_edge", 4097, "must be <= 4096"),
    ("max_image_size", None, "must be an integer"),
    ("rescale_factor", 0, "must be finite and greater than zero"),
    ("rescale_factor", float("nan"), "must be finite"),
    ("image_mean", [0.5, 0.5], "must be a list of 3 numbers"),
    ("image_std", [0.5, 0.0, 0.5], "must not contain 0"),
    ("resample", "pil_nearest", "must be one of 'pil_lanczos', 'pil_bilinear', 'pil_bicubic'"),
    ("resample", 1, "must be one of"),
    ("backend", "numpy", "must be one of 'pil', 'torchvision'"),
    ("do_resize", "yes", "must be true or false"),
    ("do_image_splitting", 1, "must be true or false"),
    ("do_rescale", None, "must be true or false"),
    ("do_normalize", 0, "must be true or false"),
    ("alpha", "keep", "must be one of 'composite', 'drop'"),
    ("exif_transpose", 0, "must be true or false"),
    ("video_token_id", -1, "must be >= 0"),
    ("video_do_sample_frames", "yes", "must be true or false"),
    ("video_num_frames", 0, "must be greater than zero"),
    ("video_num_frames", 1 << 17, "must be <= 65536"),
    ("video_fps", 0, "must be finite and greater than zero"),
    ("video_size_longest_edge", 4097, "must be <= 4096"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD_VALUES, ids=[f"{f}={v!r}" for f, v, _ in BAD_VALUES])
def test_bad_value_names_the_field(field, value, message):
    with pytest.raises(mmf.SpecError, match=f"smolvlm spec: field '{field}' {message}"):
        parse_spec({**BASE, field: value})


def test_every_field_has_a_rejection_test():
    assert {f for f, _, _ in BAD_VALUES} | set(REQUIRED) == set(REQUIRED) | set(DEFAULTS)


# (change, the field the error names, message)
CROSS = [
    ({"do_rescale": False, "do_normalize": False}, "do_normalize", "and do_rescale cannot both be false"),
    ({"image_token_id": 49189}, "row_col_token_ids", "the marker ids must all differ"),
    ({"newline_token_id": 49152}, "row_col_token_ids", "the marker ids must all differ"),
    ({"row_col_token_ids": [[1, 1]] * 6}, "row_col_token_ids", "the marker ids must all differ"),
    ({"row_col_token_ids": row_col_table(49189)}, "row_col_token_ids", "the marker ids must all differ"),
    ({"max_image_size": 8, "image_seq_len": 65}, "image_seq_len", "must not exceed max_image_size \\*\\* 2 = 64"),
    ({"size_longest_edge": 4096, "max_image_size": 512, "row_col_token_ids": row_col_table(1, 7)},
     "size_longest_edge", "splits an image into up to 8 rows or columns of max_image_size=512, but "
                          "row_col_token_ids holds 7x7 markers"),
    ({"video_token_id": 49280}, "video_token_id", "needs variant 'smolvlm': Idefics3Processor has no video processor"),
    ({"variant": "smolvlm", "video_token_id": 49190}, "row_col_token_ids", "the marker ids must all differ"),
    # Without the resize a grid may fill the marker table: 37 frames of 4096 ** 2.
    ({"do_resize": False, "max_image_size": 4096, "size_longest_edge": 4096}, "max_image_size",
     "=4096: up to 37 frames of max_image_size \\*\\* 2 make 620756992 pixels per item, above the 178956970"),
]


@pytest.mark.parametrize(("change", "field", "message"), CROSS, ids=[str(c)[:60] for c, _, _ in CROSS])
def test_cross_field_rejections_name_the_fields(change, field, message):
    with pytest.raises(mmf.SpecError, match=f"smolvlm spec: field[s]? '{field}'.* {message}"):
        parse_spec({**BASE, **change})


def test_limits_of_the_cross_rules_are_accepted():
    # 6 tiles a side exactly fit the 6x6 markers; without splitting or resizing the grid is
    # decided per image (test_smolvlm_bad_input.py).
    assert parse_spec({**BASE, "size_longest_edge": 3072}).size_longest_edge == 3072
    assert parse_spec({**BASE, "size_longest_edge": 4096, "do_image_splitting": False}).do_image_splitting is False
    assert parse_spec({**BASE, "size_longest_edge": 4096, "do_resize": False}).do_resize is False
    assert parse_spec({**BASE, "max_image_size": 8, "image_seq_len": 64, "size_longest_edge": 48}).image_seq_len == 64
    # One 4096 tile with the resize, or without splitting, is 16.7 M pixels: accepted.
    assert parse_spec({**BASE, "max_image_size": 4096, "size_longest_edge": 4096}).max_image_size == 4096
    unsplit = {**BASE, "max_image_size": 4096, "do_resize": False, "do_image_splitting": False}
    assert parse_spec(unsplit).do_resize is False
    assert parse_spec({**BASE, "max_image_size": 2048, "do_resize": False}).max_image_size == 2048


def test_backend_picks_the_resizer_of_the_filter():
    assert parse_spec(BASE).resizer == "pil_lanczos"
    tv = {**BASE, "backend": "torchvision"}
    assert parse_spec({**tv, "resample": "pil_bilinear"}).resizer == "aten_u8_bilinear"
    assert parse_spec({**tv, "resample": "pil_bicubic"}).resizer == "aten_u8"
    assert parse_spec(tv).resizer == "aten_u8_lanczos"


def test_pipeline_rejects_through_the_factory():
    with pytest.raises(mmf.SpecError, match="smolvlm spec: field 'max_image_size'"):
        mmf.pipeline_from_spec({**PRESETS["smolvlm_256m_instruct"], "max_image_size": -1})
