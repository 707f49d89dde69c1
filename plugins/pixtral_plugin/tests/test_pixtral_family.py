"""Sizing, layout, planes and model kwargs of the ``pixtral`` family, and the golden rejections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.kernels import ChannelNorm, channel_norm_pil
from mm_framework.testing import load_cases, sample_image
from pixtral_plugin import PixtralFamily
from pixtral_plugin.layout import image_pattern, span_length
from pixtral_plugin.planes import normalize_planes
from pixtral_plugin.sizing import resized_size
from . import pixtral_images

GOLDEN = Path(__file__).parent / "golden"
CLIP = (mmf.preset("pixtral_12b")["image_mean"], mmf.preset("pixtral_12b")["image_std"])


def pipe(preset: str = "pixtral_12b", **changes) -> mmf.Pipeline:
    return mmf.pipeline_from_spec({**mmf.preset(preset), **changes})


# ----- sizing (docs/families/pixtral.md §1) ------------------------------------------


@pytest.mark.parametrize(
    "hw,edge,factor,want",
    [
        ((10, 10), 1024, 16, (16, 16)),  # small images are stretched up to the next multiple
        ((50, 70), 1024, 16, (64, 80)),
        ((768, 1024), 1024, 16, (768, 1024)),  # already fits and aligned: unchanged
        ((1025, 1025), 1024, 16, (1024, 1024)),
        ((960, 1280), 1024, 16, (768, 1024)),
        ((3000, 4000), 1024, 16, (768, 1024)),
        ((1000, 2048), 1024, 16, (512, 1024)),
        ((3, 3000), 1024, 16, (16, 1024)),  # floor(3 / 2.93) = 1, then up to 16
        ((1540, 7), 1024, 16, (1024, 16)),
        ((960, 1280), 1540, 28, (980, 1288)),
        ((3000, 4000), 1540, 28, (1176, 1540)),
        ((1, 1), 1540, 28, (28, 28)),
    ],
)
def test_resized_size_pins(hw, edge, factor, want):
    assert resized_size(*hw, edge, factor) == want


@pytest.mark.parametrize("hw,edge", [((1, 2000), 1024), ((2, 3000), 1024), ((2000, 1), 1540), ((0, 5), 1024)])
def test_degenerate_sizes_are_media_errors(hw, edge):
    with pytest.raises(mmf.MediaError, match="pixtral: "):
        resized_size(*hw, edge, 16)


def test_degenerate_image_rejects_the_request_naming_the_item():
    p = pipe()
    with pytest.raises(mmf.MediaError, match="item 1: .*degenerates") as e:
        p.process(mmf.MmInput(images=[sample_image(8, 8), sample_image(2000, 1)], input_ids=[10, 5, 10]))
    assert e.value.item == 1
    with pytest.raises(mmf.MediaError, match="degenerates"):
        p.num_media_tokens(2000, 1)


# ----- layout --------------------------------------------------------------------------


def test_image_pattern_rows_breaks_and_end():
    pat = image_pattern(2, 3, 10, 12, 13)
    assert pat.ids == (10, 10, 10, 12, 10, 10, 10, 13)
    assert pat.content == (0, 7) and span_length(2, 3) == 7
    assert image_pattern(1, 1, 10, 12, 13).ids == (10, 13)


@pytest.mark.parametrize("preset", ["pixtral_12b", "mistral_small_3_1"])
def test_expansion_and_offsets(preset):
    p = pipe(preset)
    f = p.spec["patch_size"] * p.spec["spatial_merge_size"]
    out = p.process(mmf.MmInput(images=[sample_image(70, 50), sample_image(10, 10)], input_ids=[1, 3, 10, 7, 10, 4]))
    rows, cols = -(-50 // f), -(-70 // f)
    first = ([10] * cols + [12]) * rows
    first[-1] = 13
    second = [10, 13]
    assert out.input_ids.tolist() == [1, 3, *first, 7, *second, 4]
    assert out.offsets == ((2, 2 + len(first) - 2), (3 + len(first), 3 + len(first)))
    assert isinstance(out.positions, mmf.Rope1D)
    assert [it.aux["image_sizes"].array.tolist() for it in out.items] == [[rows * f, cols * f], [f, f]]


def test_break_and_end_ids_in_the_prompt_stay_text():
    out = pipe().process(mmf.MmInput(images=[sample_image(16, 16)], input_ids=[12, 10, 13]))
    assert out.input_ids.tolist() == [12, 10, 13, 13] and out.offsets == ((1, 1),)


@pytest.mark.parametrize("preset", ["pixtral_12b", "mistral_small_3_1"])
@pytest.mark.parametrize("wh", [(1, 1), (16, 16), (17, 15), (29, 57), (640, 480), (3000, 3), (5000, 4000), (1541, 770)])
def test_num_media_tokens_is_the_span(preset, wh):
    p = pipe(preset)
    f = p.spec["patch_size"] * p.spec["spatial_merge_size"]
    h, w = resized_size(wh[1], wh[0], p.spec["longest_edge"], f)
    assert p.num_media_tokens(*wh) == (h // f) * (w // f + 1) - 1


# ----- planes and kwargs ---------------------------------------------------------------


@pytest.mark.parametrize("preset, wh, size", [("pixtral_12b", (1280, 960), (1024, 768)),
                                              ("mistral_small_3_1", (1280, 960), (1288, 980)),
                                              ("pixtral_12b", (10, 10), (16, 16))])
def test_processed_size_is_the_resized_image(preset, wh, size):
    p = pipe(preset)
    inp = mmf.MmInput(images=[sample_image(*wh, "PNG", 1)], input_ids=[1, 10, 2])
    for out in (p.process(inp), p.count_tokens(inp)):
        (item,) = out.items
        patch = p.spec["patch_size"]
        assert (item.size, item.processed_size) == (wh, size)
        assert item.geometry == mmf.Grid(1, size[1] // patch, size[0] // patch)


def test_planes_program_and_table_agree():
    rgb = np.random.default_rng(3).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    norm = channel_norm_pil(*CLIP)
    assert norm.steps is not None
    fast = normalize_planes(rgb, norm)
    gathered = normalize_planes(rgb, ChannelNorm(norm.lut))
    want = np.stack([norm.lut[c][rgb[..., c]] for c in range(3)])
    assert fast.tobytes() == gathered.tobytes() == want.tobytes()
    assert fast.flags.c_contiguous and fast.dtype == np.float32


def test_planes_accept_strided_input():
    rgb = np.random.default_rng(4).integers(0, 256, (40, 60, 3), dtype=np.uint8)
    norm = channel_norm_pil(*CLIP)
    np.testing.assert_array_equal(normalize_planes(rgb[::2, ::3], norm), normalize_planes(rgb[::2, ::3].copy(), norm))


@pytest.mark.parametrize("preset", ["pixtral_12b", "mistral_small_3_1"])
def test_norm_is_transformers_table(preset):
    with np.load(GOLDEN / "blobs.npz") as z:
        want = z[f"normalize_table/{preset}"]
    spec = mmf.preset(preset)
    assert channel_norm_pil(spec["image_mean"], spec["image_std"]).lut.tobytes() == want.tobytes()


def test_model_kwargs_pad_to_the_largest_sides():
    out = pipe().process(mmf.MmInput(images=[sample_image(70, 20), sample_image(20, 70)], input_ids=[10, 10]))
    kw = out.model_kwargs()
    assert kw["image_sizes"].tolist() == [[32, 80], [80, 32]] and kw["image_sizes"].dtype == np.int64
    pv = kw["pixel_values"]
    assert pv.shape == (2, 3, 80, 80) and pv.dtype == np.float32
    np.testing.assert_array_equal(pv[0, :, :32, :80], out.items[0].feature.array)
    np.testing.assert_array_equal(pv[1, :, :80, :32], out.items[1].feature.array)
    assert not pv[0, :, 32:].any() and not pv[1, :, :, 32:].any()


def test_model_kwargs_of_no_items():
    params = {k: v for k, v in mmf.preset("pixtral_12b").items() if k != "family"}
    kw = PixtralFamily(params).mm_model_kwargs(items=[])
    assert kw["pixel_values"].shape == (0, 3, 0, 0) and kw["image_sizes"].shape == (0, 2)


def test_decode_options_follow_the_spec():
    assert pipe().decode_options.alpha == "composite" and not pipe().decode_options.exif_transpose
    d = pipe(alpha="drop", exif_transpose=True).decode_options
    assert (d.alpha, d.exif_transpose) == ("drop", True)


def test_backends_share_the_plan_and_differ_in_pixels_only():
    """The backend changes the resize and normalize arithmetic alone (the torchvision one's
    parity is tests/test_pixtral_live_parity.py): ids, offsets and sizes agree."""
    data = [sample_image(300, 200, seed=5), sample_image(64, 48, seed=6)]
    pil, tv = pipe("mistral_small_3_1"), pipe("mistral_small_3_1", backend="torchvision")
    a, b = (p.process(mmf.MmInput(images=data, input_ids=[1, 10, 10, 2])) for p in (pil, tv))
    assert a.input_ids.tolist() == b.input_ids.tolist() and a.offsets == b.offsets
    for x, y in zip(a.items, b.items):
        assert x.aux["image_sizes"].array.tolist() == y.aux["image_sizes"].array.tolist()
        assert x.feature.array.shape == y.feature.array.shape
        # Both images are resized (to 308x224 and 84x56); the two bicubics round differently.
        assert not np.array_equal(x.feature.array, y.feature.array)
    assert not tv.decode_options.keep_source  # the ATen clone resizes from the array


def test_ids_outside_int32_are_rejected():
    with pytest.raises(mmf.InvalidInputError):
        pipe().process(mmf.MmInput(images=[sample_image(16, 16)], input_ids=[10, 2**31]))


# ----- golden rejections ---------------------------------------------------------------


@pytest.mark.parametrize("case", load_cases(GOLDEN / "rejections"), ids=lambda c: c.name)
def test_golden_rejection(case):
    want = case.doc["expected_error"]
    p = mmf.pipeline_from_spec(case.doc["spec"])
    with pytest.raises(getattr(mmf, want["type"]), match=want["match"]) as e:
        p.process(mmf.MmInput(images=case.images(pixtral_images.make), input_ids=case.doc["prompt_ids"]))
    assert e.value.item == want["item"]


def test_golden_matrix_covers_both_presets_and_every_image():
    names = [json.loads(p.read_text())["name"] for p in GOLDEN.glob("*/*/case.json")]
    for preset in ("pixtral_12b", "mistral_small_3_1"):
        for image in pixtral_images.IMAGES:
            assert f"{preset}-{image.replace('.', '_')}" in names
