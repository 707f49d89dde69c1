"""Spec validation and the pixel-free sizing: every field checked, every failure a SpecError
naming the field; the crop-grid choice and global sizes in transformers' arithmetic."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from deepseek_ocr2_plugin import LocalCrops, optimal_canvas
from deepseek_ocr2_plugin.spec import DEFAULTS, PRESETS, REQUIRED, parse_spec
from deepseek_ocr2_plugin.tiling import global_size

BASE = {k: v for k, v in PRESETS["deepseek_ocr2"].items() if k in REQUIRED}


def test_defaults_and_roundtrip():
    spec = parse_spec(BASE)
    assert spec.to_dict() == {"family": "deepseek_ocr2", **BASE, **DEFAULTS}
    assert parse_spec({k: v for k, v in spec.to_dict().items() if k != "family"}) == spec


def test_preset_is_the_published_checkpoint():
    p = mmf.preset("deepseek_ocr2")
    assert (p["image_token_id"], p["size"], p["tile_size"], p["patch_size"], p["downsample_ratio"]) == (
        128815, 1024, 768, 16, 4)
    assert (p["min_patches"], p["max_patches"], p["crop_to_patches"], p["background_color"]) == (2, 6, True,
                                                                                                 [127, 127, 127])
    assert (p["resample"], p["image_mean"], p["image_std"], p["rescale_factor"]) == (
        "pil_bicubic", [0.5] * 3, [0.5] * 3, 1 / 255)
    pipe = mmf.pipeline_from_spec(p)
    # 16 * 16 global queries, 12 * 12 per crop, one separator: 1280x960 takes a 3x2 grid.
    assert pipe.num_media_tokens(1280, 960) == 256 + 6 * 144 + 1
    assert pipe.num_media_tokens(768, 768) == 257


@pytest.mark.parametrize("field", REQUIRED)
def test_required_fields(field):
    with pytest.raises(mmf.SpecError, match=field):
        parse_spec({k: v for k, v in BASE.items() if k != field})


@pytest.mark.parametrize(("field", "value", "match"), [
    ("size", 0, "size"),
    ("size", 5000, "size"),
    ("tile_size", True, "tile_size"),
    ("patch_size", 0, "patch_size"),
    ("downsample_ratio", 1.5, "downsample_ratio"),
    ("image_token_id", -1, "image_token_id"),
    ("image_token_id", 2**31, "image_token_id"),
    ("rescale_factor", 0, "rescale_factor"),
    ("image_std", [0.5, 0, 0.5], "image_std"),
    ("image_mean", [0.5, 0.5], "image_mean"),
    ("backend", "cuda", "backend"),
    ("resample", "aten_u8", "resample"),
    ("crop_to_patches", 1, "crop_to_patches"),
    ("min_patches", 0, "min_patches"),
    ("max_patches", 37, "max_patches"),
    ("min_patches", 7, r"min_patches.*=7 exceeds max_patches=6"),
    ("background_color", [127, 127], "background_color"),
    ("background_color", [127, 127, 256], "background_color"),
    ("background_color", [127, 127, True], "background_color"),
    ("background_color", "grey", "background_color"),
    ("do_rescale", "yes", "do_rescale"),
    ("alpha", "keep", "alpha"),
    ("exif_transpose", None, "exif_transpose"),
])
def test_bad_values_name_the_field(field, value, match):
    with pytest.raises(mmf.SpecError, match=match):
        parse_spec({**BASE, field: value})


def test_cross_field_rules():
    with pytest.raises(mmf.SpecError, match="do_normalize.*cannot both be false"):
        parse_spec({**BASE, "do_rescale": False, "do_normalize": False})
    with pytest.raises(mmf.SpecError, match=r"tile_size.*pixels per item, above"):
        parse_spec({**BASE, "tile_size": 4096, "max_patches": 36})
    # Without crops only the global view counts.
    assert parse_spec({**BASE, "tile_size": 4096, "max_patches": 36, "crop_to_patches": False}).global_side == 4096


@pytest.mark.parametrize(("w", "h", "grid"), [
    (1280, 960, (3, 2)),   # 4:3 is closest to 3:2
    (960, 1280, (2, 3)),
    (1000, 1000, (2, 2)),  # square: 1x1 has too few tiles, 2x2 is exact
    (1600, 800, (2, 1)),   # 2:1 exactly; 4x2 would tie but exceeds 6 tiles
    (3000, 20, (6, 1)),
    (20, 3000, (1, 6)),
])
def test_crop_grids(w, h, grid):
    assert optimal_canvas(w, h, 768, 2, 6) == grid


def test_ties_favour_more_tiles_only_while_the_image_covers_half():
    """2:1 ties between 2x1 and 4x2 (min 2, max 8): the later 4x2 wins while the image's area
    exceeds half of its 8 tiles' area."""
    assert optimal_canvas(1600, 800, 768, 2, 8) == (2, 1)   # 1.28 MP < 0.5 * 8 * 768^2
    assert optimal_canvas(3200, 1600, 768, 2, 8) == (4, 2)  # 5.12 MP > 2.36 MP
    assert optimal_canvas(100, 100, 768, 7, 6) == (1, 1)    # no grid at all: transformers' fallback


def test_global_sizes_round_half_to_even():
    assert global_size(1280, 960, 1024) == (1024, 768)
    assert global_size(2048, 3, 1024) == (1024, 2)   # 1.5 -> 2
    assert global_size(2048, 5, 1024) == (1024, 2)   # 2.5 -> 2 (Python's round)
    assert global_size(2000, 1, 1024) == (1024, 1)
    with pytest.raises(mmf.MediaError, match="the 3000x1 image's global view rounds to an empty 1024x0"):
        global_size(3000, 1, 1024)


def test_local_crops_count():
    assert LocalCrops(3, 2).count == 6 and LocalCrops(0, 0).count == 0
