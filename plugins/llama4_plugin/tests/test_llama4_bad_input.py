"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import pytest

from . import llama4_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput

SPEC = mmf.preset("llama4_scout_17b_16e_instruct")
IMAGE = SPEC["image_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return llama4_images.make("rgb_640x480.jpg")


class TestImageBadInput(ImageBadInput):
    @pytest.fixture
    def family_spec(self):
        return SPEC

    @pytest.fixture
    def make_image(self):
        return llama4_images.make


@pytest.mark.parametrize(("option", "match"), [
    ({"max_patches": "many"}, r"item 0: processor option max_patches='many'.*must be an integer"),
    ({"max_patches": 0}, r"item 0: processor option max_patches=0.*greater than zero"),
    ({"max_patches": 10**6}, r"item 0: processor option max_patches=1000000.*pixels per item"),
    ({"resize_to_max_canvas": "yes"}, r"item 0: processor option resize_to_max_canvas='yes'.*true or false"),
    ({"tile_size": 224}, r"item 0: processor option 'tile_size' is not one"),
])
def test_bad_item_option_names_the_option_and_item(pipe, jpeg, option, match):
    with pytest.raises(mmf.SpecError, match=match):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, **option)], input_ids=[IMAGE]))


def test_bad_request_option_is_refused(pipe, jpeg):
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option max_patches=-3.*greater than zero"):
        pipe.process(mmf.MmInput(images=[jpeg], input_ids=[IMAGE], options={"max_patches": -3}))
    with pytest.raises(mmf.SpecError, match=r"processor option 'image' is not one family 'llama4' takes"):
        pipe.process(mmf.MmInput(images=[jpeg], input_ids=[IMAGE], options={"image": {"max_patches": 2}}))
    out = pipe.process(mmf.MmInput(images=[jpeg], input_ids=[IMAGE], options={"max_patches": 2}))
    assert (out.items[0].geometry.rows, out.items[0].geometry.cols) == (1, 2)


def test_item_option_changes_one_image(pipe, jpeg):
    out = pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, max_patches=1), jpeg], input_ids=[IMAGE, IMAGE]))
    assert [(g.rows, g.cols) for g in (it.geometry for it in out.items)] == [(1, 1), (2, 2)]
    assert [it.feature.shape[0] for it in out.items] == [1, 5]
