"""The toolkit pieces Qwen2-VL-style families share (``mmp.PatchGrid``, ``mmp.PatchPixels``, ``mmp.mrope``,
``ConfigKeys.qwen2_pixels``, ``SpecFields.smart_resize_bounds``) and ``mmp.discovery_hooks``,
on their own; the families' parity tests prove them against transformers."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import plugin as mmp

SPEC = mmp.PatchGridSpec(image_token_id=9, patch_size=14, merge_size=2, temporal_patch_size=1, min_pixels=784,
                         max_pixels=28 * 28 * 16, image_mean=(0.5,) * 3, image_std=(0.5,) * 3, alpha="drop",
                         exif_transpose=True)
GRID = mmp.PatchGrid("toy", SPEC)


def test_patch_grid_sizes_counts_and_decode_options():
    assert GRID.target_size(100, 30) == (112, 28)
    assert GRID.grid(100, 30) == mmp.Grid(1, 2, 8) and GRID.tokens(mmp.Grid(1, 2, 8)) == 4
    assert GRID.decode_options == mmp.DecodeOptions(alpha="drop", exif_transpose=True, keep_source=True)
    rgb = np.zeros((28, 56, 3), np.uint8)
    assert GRID.resized(rgb) is rgb


def test_patch_grid_spec_reads_and_writes_the_image_fields():
    params = {**SPEC.image_fields(), "alpha": "composite"}
    f = mmp.SpecFields("toy", params, required=mmp.PatchGridSpec.REQUIRED, defaults=mmp.PatchGridSpec.DEFAULTS)
    fields = mmp.PatchGridSpec.read(f, max_image_pixels=10**6, alpha_modes=("composite",), max_temporal=1)
    assert mmp.PatchGridSpec(**fields).image_fields() == params
    for name, value, match in [("temporal_patch_size", 2, "must be <= 1"), ("backend", "cuda", "must be one of"),
                               ("alpha", "drop", "must be one of"), ("min_pixels", 10**6 + 1, "must be <= 1000000")]:
        bad = mmp.SpecFields("toy", {**params, name: value}, required=mmp.PatchGridSpec.REQUIRED,
                             defaults=mmp.PatchGridSpec.DEFAULTS)
        with pytest.raises(mmp.SpecError, match=f"toy spec: field '{name}' {match}"):
            mmp.PatchGridSpec.read(bad, max_image_pixels=10**6, alpha_modes=("composite",), max_temporal=1)


def test_pixels_is_offered_by_the_family_and_written_only_when_u8():
    params = SPEC.image_fields()
    assert "pixels" not in params
    u8 = {**params, "pixels": "u8"}
    f = mmp.SpecFields("toy", u8, required=mmp.PatchGridSpec.REQUIRED, defaults=mmp.PatchGridSpec.DEFAULTS)
    with pytest.raises(mmp.SpecError, match="toy spec: field 'pixels' must be one of"):
        mmp.PatchGridSpec.read(f, max_image_pixels=10**6, alpha_modes=("drop",))
    f = mmp.SpecFields("toy", u8, required=mmp.PatchGridSpec.REQUIRED, defaults=mmp.PatchGridSpec.DEFAULTS)
    fields = mmp.PatchGridSpec.read(f, max_image_pixels=10**6, alpha_modes=("drop",), pixels=mmp.PatchPixels.KINDS)
    assert mmp.PatchGridSpec(**fields).image_fields() == u8


def test_u8_patches_normalize_to_the_f32_ones():
    """The kernel's u8 patches, normalized through their PixelNorm, are its f32 patches byte for byte."""
    from mm_framework import kernels

    rgb = np.random.default_rng(0).integers(0, 256, (56, 84, 3), dtype=np.uint8)
    f32, u8 = GRID.pixels, mmp.PatchGrid("toy", mmp.PatchGridSpec(**{**SPEC.image_fields(), "pixels": "u8"})).pixels
    assert f32.dtype is np.float32 and u8.dtype is np.uint8 and u8.kernel_norm is None
    want = f32.tensor(kernels.patchify_merged_blocks(rgb, 14, 2, 1, f32.kernel_norm))
    got = u8.tensor(kernels.patchify_merged_blocks(rgb, 14, 2, 1, u8.kernel_norm))
    assert got.dtype == "u8" and got.array.dtype == np.uint8
    assert np.array_equal(got.norm.apply(got.array).view(np.uint32), want.array.view(np.uint32))
    with pytest.raises(mmp.InternalError, match="pixels must be one of"):
        mmp.PatchPixels.of("f16", f32.norm, 196)


def test_patch_grid_refusals_name_the_family():
    with pytest.raises(mmp.InvalidInputError, match="toy: stored pixels 57x56 are not multiples of the factor 28"):
        GRID.stored(np.zeros((56, 57, 3), np.uint8))
    with pytest.raises(mmp.InternalError, match="toy: expected a Grid geometry, got Tiles"):
        GRID.positions(3, [(0, 0)], [mmp.Tiles(1)])


def test_mrope_image_only_of_one_image():
    out = GRID.positions(6, [(1, 4)], [mmp.Grid(1, 4, 4)])
    assert out.positions.tolist() == [[0, 1, 1, 1, 1, 3], [0, 1, 1, 2, 2, 3], [0, 1, 2, 1, 2, 3]]
    assert out.delta == -2


@pytest.mark.parametrize(("doc", "want"), [
    ({}, (1, 2)),
    ({"min_pixels": 5}, (5, 2)),
    ({"min_pixels": None, "max_pixels": None}, (1, 2)),
    ({"size": None, "max_pixels": 9}, (1, 9)),
    ({"size": {"min_pixels": 3, "max_pixels": 4}, "min_pixels": 7, "max_pixels": 8}, (7, 8)),
])
def test_qwen2_pixels_reads_size_as_the_processors_init(doc, want):
    keys = mmp.ConfigKeys("preprocessor_config.json", doc, "toy", {"size", "min_pixels", "max_pixels"})
    assert mmp.ConfigKeys.qwen2_pixels(doc, {"shortest_edge": 1, "longest_edge": 2}, keys.error) == want


def test_qwen2_pixels_refuses_a_size_it_cannot_resolve():
    keys = mmp.ConfigKeys("preprocessor_config.json", {}, "toy", ())
    with pytest.raises(mmp.SpecError, match="preprocessor_config.json: 'size' must resolve to exactly"):
        mmp.ConfigKeys.qwen2_pixels({"size": {"min_pixels": 3}}, {}, keys.error)


@pytest.mark.parametrize(("args", "field"), [((28, 1, 100, 10**6), "merge_size"), ((28, 1, 100), "max_pixels"),
                                             ((28, 2000, 1000), "min_pixels")])
def test_smart_resize_bounds_name_the_field(args, field):
    f = mmp.SpecFields("toy", {})
    limit = args[3] if len(args) == 4 else 10**6
    factor = 2000 if field == "merge_size" else args[0]
    with pytest.raises(mmp.SpecError, match=f"toy spec: field '{field}'"):
        f.smart_resize_bounds(factor, args[1], args[2], limit)


def test_discovery_hooks_register_copies():
    presets = {"toy_1": {"family": "toy", "n": [1]}}
    families, registered, _ = mmp.discovery_hooks({"toy": dict}, presets, lambda c, p: {"family": "toy"})
    presets["toy_1"]["n"].append(2)
    got: dict = {}
    registered(lambda name, spec: got.setdefault(name, spec))
    assert got == {"toy_1": {"family": "toy", "n": [1]}}
    got["toy_1"]["n"].append(3)
    again: dict = {}
    registered(lambda name, spec: again.setdefault(name, spec))
    assert again["toy_1"]["n"] == [1]
    named: list = []
    families(lambda name, factory: named.append((name, factory)))
    assert named == [("toy", dict)]


def test_discovery_hooks_pass_the_video_config_when_asked():
    _, _, image_only = mmp.discovery_hooks({}, {}, lambda c, p: {"seen": (c, p)})
    assert image_only({"a": 1}, {"b": 2}) == {"seen": ({"a": 1}, {"b": 2})}
    _, _, with_video = mmp.discovery_hooks({}, {}, lambda c, p, v: {"seen": (c, p, v)}, video=True)
    assert with_video({"a": 1}, {"b": 2}, None) == {"seen": ({"a": 1}, {"b": 2}, None)}
    assert with_video({"a": 1}, {"b": 2}, {"c": 3})["seen"][2] == {"c": 3}


def test_video_patches_repeat_the_last_frame_into_a_short_temporal_patch():
    frames = np.random.default_rng(0).integers(0, 256, (3, 28, 28, 3), dtype=np.uint8)
    assert mmp.video_patches.grid(3, 28, 28, patch_size=14, temporal_patch_size=2) == (2, 2, 2)
    u8 = mmp.video_patches.pixel_values(frames, 28, 28, patch_size=14, merge_size=2, temporal_patch_size=2, norm=None)
    padded = np.concatenate([frames, frames[-1:]])
    want = mmp.video_patches.pixel_values(padded, 28, 28, patch_size=14, merge_size=2, temporal_patch_size=2,
                                          norm=None)
    assert u8.shape == (8, 3 * 2 * 14 * 14) and u8.tobytes() == want.tobytes()
    # Row 4 (second temporal patch, first patch): channel 0, frames 2 and 2 again.
    block = u8[4].reshape(3, 2, 14, 14)
    assert (block[0, 0] == frames[2, :14, :14, 0]).all() and (block[0, 1] == frames[2, :14, :14, 0]).all()
    with pytest.raises(mmp.InternalError):
        mmp.video_patches.grid(2, 27, 28, patch_size=14, temporal_patch_size=2)


def test_part_adjacent_and_drop_separators():
    from mm_framework.testing import drop_separators, part_adjacent

    assert part_adjacent([1, 7, 7, 8, 2, 7], {7, 8}, 9) == [1, 7, 9, 7, 9, 8, 2, 7]
    assert part_adjacent([7], {7}, 9) == [7] and part_adjacent([], {7}, 9) == []
    # Two one-token images parted by a separator: dropping it moves what follows down by one.
    ids = np.array([1, 7, 9, 7, 2])
    pos = np.array([[0, 1, 2, 3, 4]] * 3)
    kept, moved = drop_separators(ids, pos, 9)
    assert kept == [1, 7, 7, 2] and moved.tolist() == [[0, 1, 2, 3]] * 3
