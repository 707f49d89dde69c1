"""qwen_vl processing pins that need no reference install: sizing, layout, positions, kwargs."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import par
from qwen_vl_plugin import QwenVlFamily

Q2 = mmf.preset("qwen2_vl_class_defaults")
PAD = Q2["image_token_id"]


def png(w: int, h: int, seed: int = 0) -> bytes:
    rgb = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, "PNG")
    return buf.getvalue()


def family(spec=Q2):
    return QwenVlFamily({k: v for k, v in spec.items() if k != "family"})


@pytest.mark.parametrize(
    ("hw", "spec", "target"),
    [
        # docs/families/qwen_vl.md, transformers 5.24 (factor 28, [3136, 1003520]).
        ((10, 10), Q2, (56, 56)),
        ((70, 98), Q2, (56, 112)),  # 2.5 rounds to 2, 3.5 to 4 (half to even)
        ((3000, 20), Q2, (2996, 28)),
        ((960, 1280), Q2, (840, 1148)),
        ((3000, 4000), Q2, (840, 1148)),
        ((1080, 1920), Q2, (728, 1316)),
        # Where transformers and the sglang formula differ (docs/architecture.md, "Sizing"): follow transformers.
        ((10, 1000), {**Q2, "max_pixels": 12845056}, (28, 560)),
        ((14, 2000), {**Q2, "max_pixels": 12845056}, (28, 672)),
        ((10, 2000), {**Q2, "min_pixels": 3136, "max_pixels": 3136}, (28, 812)),
        ((1365, 2048), mmf.preset("qwen3_vl"), (1376, 2048)),
    ],
)
def test_target_size_is_transformers_smart_resize(hw, spec, target):
    h, w = hw
    fam = family(spec)
    assert fam.target_size(w, h) == (target[1], target[0])
    ps, m = spec["patch_size"], spec["merge_size"]
    tokens = (target[0] // ps) * (target[1] // ps) // (m * m)
    assert mmf.pipeline_from_spec({"family": "qwen_vl", **spec}).num_media_tokens(w, h) == tokens


def test_aspect_ratio_above_200_is_a_media_error():
    pipe = mmf.pipeline_from_spec(Q2)
    with pytest.raises(mmf.MediaError, match="aspect ratio"):
        pipe.num_media_tokens(3000, 10)
    assert pipe.num_media_tokens(2000, 10) > 0  # exactly 200 passes
    ok, bad = png(64, 64), png(3000, 10)
    with pytest.raises(mmf.MediaError, match="item 1: .*aspect ratio") as info:
        pipe.process(mmf.MmInput(images=[ok, bad], input_ids=[PAD, PAD]))
    assert info.value.item == 1


def tiny_spec(**changes):
    # ps 2, merge 2, identity normalize: pixel_values are f32(v/255).
    return {**Q2, "patch_size": 2, "merge_size": 2, "temporal_patch_size": 2, "min_pixels": 1,
            "max_pixels": 1 << 20, "image_mean": [0, 0, 0], "image_std": [1, 1, 1], **changes}


def test_patch_order_pins():
    # docs/families/qwen_vl.md pins: 4x8 image, pixel(y, x, c) = y*16 + x*2 + c.
    y, x, c = np.meshgrid(np.arange(4), np.arange(8), np.arange(3), indexing="ij")
    rgb = (y * 16 + x * 2 + c).astype(np.uint8)
    fam = family(tiny_spec())
    item = fam.mm_process_item(media=mmp.DecodedImage(rgb))
    pv = item.feature.array
    assert pv.shape == (8, 24)
    assert item.geometry == mmf.Grid(1, 2, 4)
    assert item.aux["image_grid_thw"].array.tolist() == [1, 2, 4]
    val = lambda yy, xx, cc: np.float32(np.float64(rgb[yy, xx, cc]) / 255)  # noqa: E731
    assert pv[1, 0] == val(0, 2, 0)  # row 1: next patch inside the first merge window
    assert pv[2, 0] == val(2, 0, 0)  # row 2: second patch row of the window
    assert pv[4, 0] == val(0, 4, 0)  # row 4: next merge window
    assert pv[1, 4] == pv[1, 0]  # column 4: temporal copy t=1
    assert pv[0, 8] == val(0, 0, 1)  # column 8: channel 1
    assert pv[0, 3] == val(1, 1, 0)  # (py, px) = (1, 1)


def test_temporal_patch_size_three_repeats_the_frame():
    rgb = np.random.default_rng(1).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    pv = family(tiny_spec(temporal_patch_size=3)).mm_process_item(media=mmp.DecodedImage(rgb)).feature.array
    blocks = pv.reshape(16, 3, 3, 4)
    np.testing.assert_array_equal(blocks[:, :, 1], blocks[:, :, 0])
    np.testing.assert_array_equal(blocks[:, :, 2], blocks[:, :, 0])


def test_backends_differ_only_in_normalize_rounding_without_resize():
    # 640x480 is a multiple of 32: the qwen3_vl image is not resized, so only the LUTs differ.
    rgb = np.random.default_rng(2).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    q3 = mmf.preset("qwen3_vl")
    pil = family(q3).mm_process_item(media=mmp.DecodedImage(rgb)).feature.array
    tv = family({**q3, "backend": "torchvision"}).mm_process_item(media=mmp.DecodedImage(rgb)).feature.array
    assert pil.shape == tv.shape == (1200, 1536)
    assert not np.array_equal(pil, tv)
    assert np.abs(pil - tv).max() <= 2.5e-7
    assert pil.min() == tv.min() == -1.0 or rgb.min() > 0


def test_resize_is_skipped_when_the_size_is_already_right():
    rgb = np.random.default_rng(3).integers(0, 256, (448, 448, 3), dtype=np.uint8)
    assert family().resized(rgb) is rgb
    assert family().resized(rgb[:440]).shape == (448, 448, 3)


def test_layout_and_positions_for_two_images():
    pipe = mmf.pipeline_from_spec(Q2)
    ids = [1, 151652, PAD, 151653, 2, 151652, PAD, 151653, 3]
    out = pipe.process(mmf.MmInput(images=[png(56, 56), png(112, 56)], input_ids=ids))
    assert out.offsets == ((2, 5), (9, 16))
    assert out.input_ids.tolist() == [1, 151652] + [PAD] * 4 + [151653, 2, 151652] + [PAD] * 8 + [151653, 3]
    pos = out.positions
    assert isinstance(pos, mmf.MRope)
    np.testing.assert_array_equal(pos.positions[:, :2], [[0, 1]] * 3)
    np.testing.assert_array_equal(pos.positions[:, 2:6], [[2, 2, 2, 2], [2, 2, 3, 3], [2, 3, 2, 3]])
    # Text resumes at 2 + max(2, 2) = 4; the second image (56x112: grid 4x8, merged 2x4)
    # starts at 7 and text after it at 7 + max(2, 4) = 11.
    np.testing.assert_array_equal(pos.positions[:, 6:9], [[4, 5, 6]] * 3)
    np.testing.assert_array_equal(pos.positions[:, 9:17], [[7] * 8, [7] * 4 + [8] * 4, [7, 8, 9, 10] * 2])
    np.testing.assert_array_equal(pos.positions[:, 17:], [[11, 12]] * 3)
    assert pos.delta == 13 - 19
    kw = out.model_kwargs()
    assert kw["pixel_values"].shape == (16 + 32, 1176) and kw["pixel_values"].dtype == np.float32
    np.testing.assert_array_equal(kw["pixel_values"][:16], out.items[0].feature.array)
    assert kw["image_grid_thw"].tolist() == [[1, 4, 4], [1, 4, 8]]
    assert kw["image_grid_thw"].dtype == np.int64


def test_positions_pin_from_the_reference():
    # docs/families/qwen_vl.md, "Prompt and positions": L = 11, image at 3..8, grid [1, 4, 6], merge 2.
    pos = family().mm_positions(input_len=11, offsets=[(3, 8)], geometries=[mmf.Grid(1, 4, 6)], modalities=["image"])
    assert pos.positions.tolist() == [
        [0, 1, 2, 3, 3, 3, 3, 3, 3, 6, 7],
        [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7],
        [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7],
    ]
    assert pos.delta == -3


def test_placeholder_count_mismatch_is_a_layout_error():
    pipe = mmf.pipeline_from_spec(Q2)
    with pytest.raises(mmf.LayoutError, match="2 media placeholder"):
        pipe.process(mmf.MmInput(images=[png(56, 56)], input_ids=[PAD, 5, PAD]))


@pytest.mark.parametrize("ids, k", [([PAD, -1], 1), ([2**31, PAD], 0)])
def test_prompt_ids_must_be_int32_token_ids(ids, k):
    pipe = mmf.pipeline_from_spec(Q2)
    with pytest.raises(mmf.InvalidInputError, match=rf"input_ids\[{k}\] = {ids[k]} is outside this family's id range"):
        pipe.process(mmf.MmInput(images=[png(56, 56)], input_ids=ids))


def test_model_kwargs_of_no_items_keep_their_shapes():
    kw = family(mmf.preset("qwen3_vl")).mm_model_kwargs(items=[])
    assert kw["pixel_values"].shape == (0, 1536) and kw["image_grid_thw"].shape == (0, 3)


@settings(max_examples=25, deadline=None)
@given(w=st.integers(1, 400), h=st.integers(1, 400), preset=st.sampled_from(["qwen2_vl", "qwen3_vl"]))
def test_num_media_tokens_equals_the_processed_span(w, h, preset):
    pipe = mmf.pipeline_from_spec(mmf.preset(preset))
    data = png(w, h, seed=w * 1000 + h)
    if max(w, h) / min(w, h) > 200:
        with pytest.raises(mmf.MediaError):
            pipe.num_media_tokens(w, h)
        return
    out = pipe.process(mmf.MmInput(images=[data], input_ids=[7, PAD, 8]))
    s, e = out.offsets[0]
    assert pipe.num_media_tokens(w, h) == e - s + 1 == len(out.input_ids) - 2


def test_output_is_identical_inline_and_threaded():
    pipe = mmf.pipeline_from_spec({**mmf.preset("qwen2_5_vl"), "backend": "torchvision"})
    req = mmf.MmInput(images=[png(700, 500, 1), png(300, 900, 2), png(64, 64, 3)], input_ids=[PAD, 1, PAD, 2, PAD])
    try:
        par.set_threads("inline")
        a = pipe.process(req)
        par.set_threads(2)
        b = pipe.process(req)
    finally:
        par.set_threads(None)
    assert [x.feature for x in a.items] == [x.feature for x in b.items]
    assert a.positions == b.positions
