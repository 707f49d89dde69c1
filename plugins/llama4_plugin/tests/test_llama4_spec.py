"""The spec: the presets' derived values, round trips, and every rule that refuses a spec
(a SpecError naming the field)."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from llama4_plugin import Llama4Family, parse_spec

PRESET = mmf.preset("llama4_scout_17b_16e_instruct")
FIELDS = {k: v for k, v in PRESET.items() if k != "family"}


def test_preset_derived_values():
    s = parse_spec(FIELDS)
    assert (s.downsample_ratio, s.tokens_per_tile, s.resizer, s.feature_dtype) == (4, 144, "aten_u8_bilinear",
                                                                                   "bf16")
    assert parse_spec({**FIELDS, "do_normalize": False}).feature_dtype == "f32"
    assert s.to_dict() == PRESET


def test_token_counts_follow_the_grid():
    pipe = mmf.pipeline_from_spec(PRESET)
    # One tile: <|image_start|> <|image|> 144 x <|patch|> <|image_end|>, the span from the first patch.
    assert pipe.num_media_tokens(336, 336) == 144
    # 1x2 tiles and the thumbnail: 144 | x-sep | 144 | y-sep | <|image|> | 144.
    assert pipe.num_media_tokens(337, 336) == 3 * 144 + 3
    # 3x4 tiles: 12 runs, 3 x-seps per row, a y-sep per row, <|image|>, the thumbnail's run.
    assert pipe.num_media_tokens(1280, 960) == 13 * 144 + 3 * 3 + 3 + 1


def test_expansion_ids():
    fam = Llama4Family({**FIELDS, "tile_size": 28, "patch_size": 14})  # 1 patch token per tile
    s = fam.spec
    one = fam.expansion(1, 1)
    assert one.ids == (s.image_start_token_id, s.image_token_id, s.patch_token_id, s.image_end_token_id)
    assert one.content == (2, 3)
    grid = fam.expansion(2, 2)
    p, x, y = s.patch_token_id, s.tile_x_separator_token_id, s.tile_y_separator_token_id
    assert grid.ids == (s.image_start_token_id, p, x, p, y, p, x, p, y, s.image_token_id, p, s.image_end_token_id)
    assert grid.content == (1, 11)


@pytest.mark.parametrize(("change", "field", "match"), [
    ({"do_rescale": False}, "do_rescale", "must be true"),
    ({"patch_token_id": 200090}, "patch_token_id", "must all differ"),
    ({"patch_size": 400}, "patch_size", "exceeds tile_size"),
    ({"pixel_shuffle_ratio": 0.01}, "pixel_shuffle_ratio", "leaves 0 <|patch|> tokens"),
    ({"max_patches": 10**4}, "max_patches", "pixels per item"),
    ({"max_patches": 0}, "max_patches", "greater than zero"),
    ({"tile_size": 0}, "tile_size", "greater than zero"),
    ({"image_std": [0.5, 1e-45, 0.5]}, "image_std", "non-zero in bfloat16"),
    ({"image_std": [0.5, 0.0, 0.5]}, "image_std", ""),
    ({"resample": "nearest"}, "resample", ""),
    ({"alpha": "keep"}, "alpha", ""),
    ({"image_token_id": -1}, "image_token_id", ""),
    ({"rescale_factor": 0}, "rescale_factor", ""),
])
def test_bad_specs_are_refused(change, field, match):
    with pytest.raises(mmf.SpecError, match=field) as e:
        parse_spec({**FIELDS, **change})
    assert match in str(e.value)


def test_missing_and_unknown_fields_are_refused():
    with pytest.raises(mmf.SpecError, match="patch_token_id"):
        parse_spec({k: v for k, v in FIELDS.items() if k != "patch_token_id"})
    with pytest.raises(mmf.SpecError, match="do_pan_and_scan"):
        parse_spec({**FIELDS, "do_pan_and_scan": True})
