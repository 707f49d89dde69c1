"""The qwen_vl spec: every field validated with a SpecError naming it; presets; discovery."""

from __future__ import annotations

import copy
import json
import pickle
import time

import attrs
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from qwen_vl_plugin import QwenVlFamily
from qwen_vl_plugin.spec import CLIP_MEAN, CLIP_STD, DEFAULTS, PRESETS, REQUIRED

BASE = {k: v for k, v in PRESETS["qwen2_vl"].items() if k != "family"}


def build(**changes):
    params = {**copy.deepcopy(BASE), **changes}
    return mmf.pipeline_from_spec({"family": "qwen_vl", **params})


def test_family_is_discovered_through_its_entry_point():
    fams = {f["name"]: f for f in mmf.list_families()}
    assert fams["qwen_vl"]["distribution"] == "mm-framework-qwen-vl"
    assert fams["qwen_vl"]["plugin"] == "qwen_vl"


def test_presets_are_complete_resolved_specs():
    assert mmf.preset("qwen2_vl_class_defaults") == {
        "family": "qwen_vl",
        "image_token_id": 151655,
        "patch_size": 14,
        "merge_size": 2,
        "temporal_patch_size": 2,
        "min_pixels": 3136,
        "max_pixels": 1003520,
        "image_mean": list(CLIP_MEAN),
        "image_std": list(CLIP_STD),
        "backend": "pil",
        "alpha": "composite",
        "exif_transpose": False,
        # Qwen2VLVideoProcessor() bare: every frame, 100352 .. 602112 pixels per frame.
        "video_processor": "qwen2",
        "video_token_id": 151656,
        "video_min_pixels": 100352,
        "video_max_pixels": 602112,
        "video_sample_frames": False,
    }
    # The published Qwen2/2.5 checkpoints' video frames take the image bounds.
    hub2 = {**mmf.preset("qwen2_vl_class_defaults"), "max_pixels": 12845056, "video_min_pixels": 3136,
            "video_max_pixels": 12845056}
    assert mmf.preset("qwen2_vl") == hub2
    assert mmf.preset("qwen2_5_vl") == {**hub2, "tokens_per_second": 2}
    q3 = mmf.preset("qwen3_vl")
    assert (q3["patch_size"], q3["min_pixels"], q3["max_pixels"], q3["image_mean"], q3["image_std"]) == (
        16, 65536, 16777216, [0.5] * 3, [0.5] * 3
    )
    assert {k: v for k, v in q3.items() if k.startswith(("video_", "vision_"))} == {
        "video_processor": "qwen3", "video_token_id": 151656, "video_min_pixels": 4096, "video_max_pixels": 25165824,
        "video_sample_frames": True, "video_fps": 2.0, "video_min_frames": 4, "video_max_frames": 768,
        "vision_start_token_id": 151652, "vision_end_token_id": 151653,
    }
    digits = {str(d): 15 + d for d in range(10)}
    assert q3["timestamp_token_ids"] == {"<": 27, **digits, ".": 13, " seconds": 6486, ">": 29}
    assert mmf.preset("qwen3_5") == {
        **q3, "image_token_id": 248056, "video_token_id": 248057, "vision_start_token_id": 248053,
        "vision_end_token_id": 248054, "timestamp_token_ids": {**q3["timestamp_token_ids"], " seconds": 6283},
    }
    for name in ("qwen2_vl", "qwen2_vl_class_defaults", "qwen2_5_vl", "qwen3_vl", "qwen3_5"):
        spec = mmf.preset(name)
        assert set(spec) <= {"family", *REQUIRED, *DEFAULTS}
        pipe = mmf.pipeline_from_spec(spec)
        assert pipe.family == "qwen_vl" and pipe.capabilities.video


def test_preset_is_a_copy():
    mmf.preset("qwen2_vl")["image_mean"][0] = 9.0
    assert mmf.preset("qwen2_vl")["image_mean"][0] == CLIP_MEAN[0]


def test_defaults_for_optional_fields():
    params = {k: v for k, v in BASE.items() if k not in ("backend", "alpha", "exif_transpose")}
    pipe = mmf.pipeline_from_spec({"family": "qwen_vl", **params})
    fam = QwenVlFamily(params)
    assert (fam.spec.backend, fam.spec.alpha, fam.spec.exif_transpose) == ("pil", "composite", False)
    chosen = attrs.evolve(pipe.decode_options, max_pixels=None)
    assert chosen == mmp.DecodeOptions(alpha="composite", exif_transpose=False)


def test_decode_options_follow_the_spec():
    pipe = build(alpha="drop", exif_transpose=True)
    assert attrs.evolve(pipe.decode_options, max_pixels=None) == mmp.DecodeOptions(alpha="drop", exif_transpose=True)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("image_token_id", -1),
        ("image_token_id", "151655"),
        ("image_token_id", True),
        ("image_token_id", 1.0),
        ("image_token_id", 1 << 63),
        ("patch_size", 0),
        ("patch_size", 14.0),
        ("merge_size", 0),
        ("merge_size", None),
        ("temporal_patch_size", 0),
        ("min_pixels", 0),
        ("max_pixels", 0),
        ("max_pixels", "big"),
        ("image_mean", [0.5, 0.5]),
        ("image_mean", [0.5, 0.5, "x"]),
        ("image_mean", 0.5),
        ("image_mean", [0.5, 0.5, float("nan")]),
        ("image_std", [0.5, 0.0, 0.5]),
        ("image_std", [0.5, 0.5, float("inf")]),
        ("image_std", [True, 0.5, 0.5]),
        ("backend", "fast"),
        ("backend", None),
        ("alpha", "white"),
        ("exif_transpose", "yes"),
        ("exif_transpose", 1),
    ],
)
def test_bad_field_is_a_spec_error_naming_it(field, value):
    with pytest.raises(mmf.SpecError, match=f"'{field}'"):
        build(**{field: value})


@pytest.mark.parametrize("field", ["image_token_id", "patch_size", "merge_size", "temporal_patch_size",
                                   "min_pixels", "max_pixels", "image_mean", "image_std"])
def test_missing_required_field_is_named(field):
    params = {k: v for k, v in BASE.items() if k != field}
    with pytest.raises(mmf.SpecError, match=f"missing required field '{field}'"):
        mmf.pipeline_from_spec({"family": "qwen_vl", **params})


def test_unknown_field_is_named():
    with pytest.raises(mmf.SpecError, match="unknown field 'resample'"):
        build(resample="pil")


def test_spec_round_trips_as_json_and_pickle():
    spec = {**mmf.preset("qwen3_vl"), "backend": "torchvision"}
    pipe = mmf.pipeline_from_spec(json.dumps(spec))
    assert pipe.spec == spec
    again = pickle.loads(pickle.dumps(pipe))
    assert again.spec == spec
    assert again.num_media_tokens(640, 480) == pipe.num_media_tokens(640, 480) == 300


# (changes, the field the error names, the other fields its message names)
CROSS = [
    # smart_resize would grow small images past max_pixels and shrink large ones below min_pixels.
    ({"min_pixels": 12845057}, "min_pixels", ["max_pixels"]),
    ({"min_pixels": 3137, "max_pixels": 3136}, "min_pixels", ["max_pixels"]),
    # smart_resize never makes a side shorter than one merged block (28 here).
    ({"min_pixels": 1, "max_pixels": 783}, "max_pixels", ["patch_size", "merge_size"]),
    ({"patch_size": 7, "merge_size": 16, "max_pixels": 12543}, "max_pixels", ["patch_size", "merge_size"]),
    # One merged block above the core's decode bound (178956970 pixels): 13378**2.
    ({"patch_size": 13378, "merge_size": 1, "max_pixels": 10**9}, "merge_size", ["patch_size"]),
]


@pytest.mark.parametrize(("changes", "field", "others"), CROSS, ids=[str(c) for c, _, _ in CROSS])
def test_inconsistent_fields_are_refused_naming_both(changes, field, others):
    with pytest.raises(mmf.SpecError) as e:
        build(**changes)
    message = str(e.value)
    assert message.startswith(f"qwen_vl spec: field '{field}' "), message
    assert all(other in message for other in others), message


def test_min_pixels_is_bounded_by_the_decode_limit():
    # Every image is scaled up to at least min_pixels: the 10**12 would be a
    # 2.7 TiB feature. The core's default decode bound is the most any image may reach.
    limit = mmf.Limits().max_image_pixels
    with pytest.raises(mmf.SpecError, match=f"field 'min_pixels' must be <= {limit}"):
        build(min_pixels=10**12, max_pixels=10**12)
    with pytest.raises(mmf.SpecError, match="field 'min_pixels'"):
        build(min_pixels=10**12)


def test_the_edges_of_the_cross_rules_are_accepted():
    limit = mmf.Limits().max_image_pixels
    # min == max is consistent; smart_resize's ceil still overshoots it, as transformers' does.
    assert build(min_pixels=1003520, max_pixels=1003520).num_media_tokens(28, 28) == 36 * 36
    assert build(min_pixels=1, max_pixels=784).num_media_tokens(640, 480) == 1
    assert build(min_pixels=limit, max_pixels=limit).spec["min_pixels"] == limit
    # max_pixels never allocates past the decoded image, so it is not bounded.
    assert build(max_pixels=10**15).num_media_tokens(640, 480) == 391


def _matrix_spec_cases():
    """The spec rows of the bad-input matrix (docs/bad-input.md) on the ``qwen2_vl`` preset:
    every field missing (unless optional), of the wrong type, out of range, NaN or infinite."""
    preset = mmf.preset("qwen2_vl")
    fields = [k for k in preset if k != "family"]
    out = []
    for f in fields:
        if f not in DEFAULTS:
            out.append((f"missing {f}", {k: v for k, v in preset.items() if k != f}, f))
        out.append((f"{f} of the wrong type", {**preset, f: {"a": 1}}, f))
    for f, v in [("patch_size", 0), ("merge_size", -2), ("temporal_patch_size", 0), ("min_pixels", -1),
                 ("max_pixels", 0), ("image_token_id", -1), ("image_std", [0.5, 0.0, 0.5]), ("backend", "cuda"),
                 ("alpha", "keep"), ("video_processor", "qwen9"), ("video_token_id", -1), ("video_min_pixels", 0),
                 ("video_token_id", preset["image_token_id"])]:
        out.append((f"{f} out of range ({v!r})", {**preset, f: v}, f))
    for f in ("image_mean", "image_std"):
        out.append((f"{f} with NaN", {**preset, f: [float("nan"), 0.5, 0.5]}, f))
        out.append((f"{f} with infinity", {**preset, f: [0.5, float("inf"), 0.5]}, f))
    out.append(("unknown field", {**preset, "colour": "red"}, "colour"))
    return out


@pytest.mark.parametrize("case, spec, field", _matrix_spec_cases(), ids=[c[0] for c in _matrix_spec_cases()])
def test_bad_spec(case, spec, field):
    t0 = time.perf_counter()
    with pytest.raises(mmf.SpecError) as e:
        mmf.pipeline_from_spec(spec)
    assert field in str(e.value), f"{case}: message does not name {field!r}: {e.value}"
    assert time.perf_counter() - t0 < 1.0  # the bad-input matrix's bound
