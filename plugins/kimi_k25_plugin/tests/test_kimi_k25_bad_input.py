"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import numpy as np
import pytest

from . import kimi_k25_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput
from kimi_k25_plugin import KimiK25Family

SPEC = mmf.preset("kimi_k2_5")
PAD = SPEC["image_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return kimi_k25_images.make("rgb_640x480.jpg")


class TestImageBadInput(ImageBadInput):
    placeholder_noun = "media"

    @pytest.fixture
    def family_spec(self):
        return SPEC

    @pytest.fixture
    def make_image(self):
        return kimi_k25_images.make


@pytest.mark.parametrize(("option", "match"), [
    ({"max_patches": "many"}, r"item 0: processor option max_patches='many'.*must be an integer"),
    ({"max_patches": 0}, r"item 0: processor option max_patches=0.*greater than zero"),
    ({"patch_size": 16}, r"item 0: processor option 'patch_size' is not one"),
])
def test_bad_item_option_names_the_option_and_item(pipe, jpeg, option, match):
    with pytest.raises(mmf.SpecError, match=match):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, **option)], input_ids=[PAD]))


def test_bad_request_option_is_refused(pipe, jpeg):
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option max_patches=-3.*greater than zero"):
        pipe.process(mmf.MmInput(images=[jpeg], input_ids=[PAD], options={"max_patches": -3}))
    out = pipe.process(mmf.MmInput(images=[jpeg], input_ids=[PAD], options={"max_patches": 16}))
    assert out.items[0].geometry == mmf.plugin.Grid(1, 4, 6)


def test_item_option_changes_one_image(pipe, jpeg):
    out = pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, max_patches=1), jpeg], input_ids=[PAD, PAD]))
    assert [it.aux["image_grid_thw"].array.tolist() for it in out.items] == [[1, 2, 2], [1, 36, 46]]


@pytest.mark.parametrize(("pixels", "match"), [
    (np.zeros((28, 30, 3), np.uint8), r"kimi_k25: stored pixels 30x28 are not multiples of the merge kernel 28"),
    (np.zeros((28, 28), np.uint8), r"stored pixels"),
    (np.zeros((28, 28, 3), np.float32), r"stored pixels"),
])
def test_bad_stored_pixels_are_refused(pixels, match):
    fam = KimiK25Family({k: v for k, v in SPEC.items() if k != "family"})
    with pytest.raises(mmf.InvalidInputError, match=match):
        fam.mm_features_from_pixels(pixels)
