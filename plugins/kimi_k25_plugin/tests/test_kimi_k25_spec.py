"""The spec: the preset's derived values, round trips, and every rule that refuses a spec
(a SpecError naming the field)."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from kimi_k25_plugin import parse_spec

PRESET = mmf.preset("kimi_k2_5")
FIELDS = {k: v for k, v in PRESET.items() if k != "family"}
PAD = PRESET["image_token_id"]


def test_preset_derived_values():
    s = parse_spec(FIELDS)
    assert (s.factor, s.resizer) == (28, "aten_u8")
    assert parse_spec({**FIELDS, "resample": "pil_lanczos"}).resizer == "aten_u8_lanczos"
    assert s.to_dict() == PRESET


def test_token_counts_follow_the_padded_grid():
    pipe = mmf.pipeline_from_spec(PRESET)
    # 100x57: kept, padded to 112x84: 8 x 6 patches, 12 merged tokens.
    assert pipe.num_media_tokens(57, 100) == 12
    # 1x1: one patch per side counted, padded to one merge kernel.
    assert pipe.num_media_tokens(1, 1) == 1
    # 1280x960: kept (91 x 68 patches < 16384), padded to 1288x980: 46 x 35 merged tokens.
    assert pipe.num_media_tokens(1280, 960) == 46 * 35
    # 4000x3000: scale sqrt(16384 / (285 * 214)) = 0.5183, 2073x1554, padded to 2100x1568.
    assert pipe.num_media_tokens(4000, 3000) == 75 * 56


@pytest.mark.parametrize(("change", "field", "match"), [
    ({"do_rescale": False, "do_normalize": False}, "do_normalize", "cannot both be false"),
    ({"max_size_per_side": 1000}, "max_size_per_side", "above the"),
    ({"max_patches": 0}, "max_patches", "greater than zero"),
    ({"patch_size": 0}, "patch_size", "greater than zero"),
    ({"merge_size": True}, "merge_size", ""),
    ({"image_std": [0.5, 0.0, 0.5]}, "image_std", ""),
    ({"image_mean": [0.5, 0.5]}, "image_mean", ""),
    ({"resample": "nearest"}, "resample", ""),
    ({"alpha": "keep"}, "alpha", ""),
    ({"image_token_id": -1}, "image_token_id", ""),
    ({"image_token_id": 2**31}, "image_token_id", ""),
    ({"rescale_factor": 0}, "rescale_factor", ""),
    ({"exif_transpose": "yes"}, "exif_transpose", ""),
    ({"rescale_factor": 1e-300}, "rescale_factor", "non-finite features"),
    ({"rescale_factor": 1e300}, "rescale_factor", "non-finite features"),
    ({"image_mean": [3e38] * 3, "image_std": [1e-38] * 3}, "image_std", "non-finite features"),
    ({"do_rescale": False, "image_std": [1e-45] * 3}, "image_std", "non-finite features"),
])
def test_bad_specs_are_refused(change, field, match):
    with pytest.raises(mmf.SpecError, match=field) as e:
        parse_spec({**FIELDS, **change})
    assert match in str(e.value)


def test_missing_and_unknown_fields_are_refused():
    with pytest.raises(mmf.SpecError, match="max_patches"):
        parse_spec({k: v for k, v in FIELDS.items() if k != "max_patches"})
    with pytest.raises(mmf.SpecError, match="in_patch_limit"):
        parse_spec({**FIELDS, "in_patch_limit": 16384})
