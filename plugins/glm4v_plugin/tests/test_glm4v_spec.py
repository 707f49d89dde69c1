"""The ``glm4v`` spec: the presets, round trips, and one SpecError naming the field for every
malformed field and every broken rule between fields."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from glm4v_plugin import PRESETS, parse_spec
from glm4v_plugin.spec import REQUIRED

PRESET = mmf.preset("glm4_1v_9b_thinking")
FIELDS = {k: v for k, v in PRESET.items() if k != "family"}


def test_the_presets_are_the_published_values():
    s = parse_spec(FIELDS)
    assert (s.image_token_id, s.patch_size, s.merge_size, s.temporal_patch_size) == (151343, 14, 2, 2)
    assert (s.min_pixels, s.max_pixels) == (12544, 9633792)
    assert s.image_mean == (0.48145466, 0.4578275, 0.40821073)
    assert s.image_std == (0.26862954, 0.26130258, 0.27577711)
    assert (s.backend, s.alpha, s.exif_transpose) == ("pil", "composite", False)
    assert s.to_dict() == PRESET == PRESETS["glm4_1v_9b_thinking"]
    # GLM-4.5V and GLM-4.6V: the same processor, <|image|> at its GLM-4.5 vocabulary id.
    for name in ("glm4_5v", "glm4_6v"):
        video = {"video_token_id": 151364, "video_variant": "glm4v" if name == "glm4_5v" else "glm46v"}
        assert mmf.preset(name) == {**PRESET, "image_token_id": 151363, **video} == PRESETS[name]
    # Video: the classes' defaults (the published video_preprocessor_config.json values), no
    # timestamp ids (the real tokenizers are not available offline: docs/families/glm4v.md §7).
    assert (s.video_token_id, s.image_start_token_id, s.image_end_token_id) == (151344, 151339, 151340)
    assert (s.video_min_pixels, s.video_max_pixels, s.video_fps, s.video_max_duration) == (12544, 47040000, 2.0, 300)
    assert (s.video_variant, s.video_timestamp_ids, s.video_sample_frames) == ("glm4v", None, True)


def test_a_spec_round_trips_through_the_pipeline():
    spec = {**PRESET, "backend": "torchvision", "min_pixels": 784, "alpha": "drop"}
    assert mmf.pipeline_from_spec(spec).spec == spec


BAD = [
    ("image_token_id", -1, "must be >= 0"),
    ("image_token_id", 2**31, "must be <= 2147483647"),
    ("image_token_id", True, "must be an integer"),
    ("patch_size", 0, "greater than zero"),
    ("patch_size", 14.0, "must be an integer"),
    ("merge_size", 0, "greater than zero"),
    ("temporal_patch_size", 0, "greater than zero"),
    ("temporal_patch_size", 17, "must be <= 16"),
    ("min_pixels", 0, "greater than zero"),
    ("min_pixels", 2**40, "must be <= 178956970"),
    ("max_pixels", "big", "must be an integer"),
    ("image_mean", [0.5, 0.5], "3"),
    ("image_mean", [0.5, float("nan"), 0.5], "finite"),
    ("image_std", [0.5, 0.0, 0.5], "must not contain 0"),
    ("backend", "cuda", "must be one of"),
    ("alpha", "composite_rgba", "must be one of"),
    ("exif_transpose", 1, "true or false"),
    # Rules between fields.
    ("merge_size", 1000, "exceeds"),
    ("max_pixels", 100, "at least (patch_size * merge_size)**2 = 784"),
    ("min_pixels", 9633793, "must not exceed max_pixels"),
    # Video fields.
    ("video_token_id", -1, "must be >= 0"),
    ("video_token_id", "x", "must be an integer or null"),
    ("image_start_token_id", 2**31, "must be <= 2147483647"),
    ("video_variant", "glm45v", "must be one of"),
    ("video_min_pixels", 0, "greater than zero"),
    ("video_max_pixels", 1567, "at least one merged block per temporal patch"),
    ("video_min_pixels", 47040001, "must not exceed video_max_pixels"),
    ("video_sample_frames", 1, "must be true or false"),
    ("video_fps", 0, "greater than zero"),
    ("video_fps", float("inf"), "finite"),
    ("video_max_duration", 0, "greater than zero"),
    ("video_max_duration", 10**6, "must be <= 86400"),
    ("video_token_id", 151343, "must differ from image_token_id"),
    ("video_timestamp_ids", [1, 2], "must be an object"),
    ("video_timestamp_ids", {"": [1]}, "keys must be non-empty strings"),
    ("video_timestamp_ids", {"0": []}, "must map to a non-empty list of token ids"),
    ("video_timestamp_ids", {"0": [-1]}, "must map to a non-empty list of token ids"),
    ("video_timestamp_ids", {"0": [True]}, "must map to a non-empty list of token ids"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD, ids=[f"{f}={v!r}" for f, v, _ in BAD])
def test_a_bad_field_is_refused_by_name(field, value, message):
    with pytest.raises(mmf.SpecError, match=rf"glm4v spec: field '{field}' .*") as e:
        mmf.pipeline_from_spec({**PRESET, field: value})
    assert message in str(e.value)


@pytest.mark.parametrize("field", REQUIRED)
def test_a_missing_required_field_is_named(field):
    spec = {k: v for k, v in PRESET.items() if k != field}
    with pytest.raises(mmf.SpecError, match=field):
        mmf.pipeline_from_spec(spec)


def test_an_unknown_field_is_named():
    with pytest.raises(mmf.SpecError, match="max_pixel"):
        mmf.pipeline_from_spec({**PRESET, "max_pixel": 1000})


def test_timestamp_ids_round_trip_as_a_mapping():
    spec = {**PRESET, "video_timestamp_ids": {"1": [21], "0": [20], "12": [32]}}
    assert mmf.pipeline_from_spec(spec).spec["video_timestamp_ids"] == {"0": [20], "1": [21], "12": [32]}


def test_timestamp_texts_cover_every_text_of_a_clip():
    from glm4v_plugin import timestamp_texts
    from glm4v_plugin.video import timestamp_text

    for variant in ("glm4v", "glm46v"):
        texts = set(timestamp_texts(variant, 30))
        for fps in (7.5, 10, 23.976, 24, 25, 29.97, 30, 59.94):
            for i in range(int(30 * fps)):
                assert timestamp_text(i / fps, variant) in texts, (variant, fps, i)
