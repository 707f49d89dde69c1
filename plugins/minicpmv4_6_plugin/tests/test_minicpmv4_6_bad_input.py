"""Bad input: each a typed MmError whose message names the item (or the field) and the cause."""

from __future__ import annotations

import pytest

from . import minicpmv4_6_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput

SPEC = mmf.preset("minicpm_v_4_6")
IMAGE = SPEC["image_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return minicpmv4_6_images.make("rgb_640x480.jpg")


class TestImageBadInput(ImageBadInput):
    @pytest.fixture
    def family_spec(self):
        return SPEC

    @pytest.fixture
    def make_image(self):
        return minicpmv4_6_images.make


def test_more_placeholders_than_images_are_refused(pipe, jpeg):
    with pytest.raises(mmf.LayoutError, match=f"prompt has 3 image placeholder.*but 2 image item.*{IMAGE}"):
        pipe.process(mmf.MmInput(images=[jpeg, jpeg], input_ids=[IMAGE, IMAGE, IMAGE]))


@pytest.mark.parametrize(("option", "match"), [
    ({"max_slice_nums": 0}, r"item 0: processor option max_slice_nums=0 for this image.*must be greater than zero"),
    ({"max_slice_nums": 65}, r"item 0: processor option max_slice_nums=65 for this image.*must be <= 64"),
    ({"downsample_mode": "8x"}, r"item 0: processor option downsample_mode='8x'.*must be one of"),
    ({"slice_mode": "yes"}, r"item 0: processor option slice_mode='yes'.*must be true or false"),
    ({"scale_resolution": 224}, r"item 0: processor option 'scale_resolution' is not one"),
])
def test_bad_item_option_names_the_option_and_item(pipe, jpeg, option, match):
    with pytest.raises(mmf.SpecError, match=match):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, **option)], input_ids=[IMAGE]))


@pytest.mark.parametrize(("change", "match"), [
    ({"image_start_token_id": IMAGE}, r"image_token_id.*must all differ"),
    ({"digit_token_ids": list(range(9))}, r"digit_token_ids.*10 token ids"),
    ({"digit_token_ids": [198, *range(16, 25)]}, r"must all differ"),
    ({"scale_resolution": 4096, "max_slice_nums": 64}, r"scale_resolution.*exceed"),
    ({"downsample_mode": "2x"}, r"downsample_mode"),
    ({"do_rescale": False, "do_normalize": False}, r"do_normalize.*cannot both be false"),
])
def test_bad_spec_is_refused_naming_the_field(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        mmf.pipeline_from_spec({**SPEC, **change})


def test_item_options_switch_slicing_and_the_token_budget_for_one_image(pipe, jpeg):
    """640x480 is above one 448x448 budget: a 1x2 grid, a 392x504 source (28x36 patches)."""
    out = pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, slice_mode=False), mmf.Image(jpeg, downsample_mode="4x"),
                                           jpeg], input_ids=[IMAGE] * 3))
    grids = [it.geometry for it in out.items]
    assert [(g.rows, g.cols) for g in grids] == [(0, 0), (1, 2), (1, 2)]
    assert [g.source for g in grids] == [(392, 504)] * 3
    assert [g.source_tokens for g in grids] == [28 * 36 // 16, 28 * 36 // 4, 28 * 36 // 16]
