"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import numpy as np
import pytest

from . import kimi_k25_images
import mm_framework as mmf
from kimi_k25_plugin import KimiK25Family

SPEC = mmf.preset("kimi_k2_5")
PAD = SPEC["image_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return kimi_k25_images.make("rgb_640x480.jpg")


def test_sixteen_bit_image_is_refused(pipe):
    with pytest.raises(mmf.MediaError, match=r"item 0: image decode: unsupported color mode I;16"):
        pipe.process(mmf.MmInput(images=[kimi_k25_images.make("png16_gray_640x480.png")], input_ids=[PAD]))


def test_truncated_image_is_refused(pipe, jpeg):
    with pytest.raises(mmf.MediaError, match=r"item 1: image decode"):
        pipe.process(mmf.MmInput(images=[jpeg, jpeg[:200]], input_ids=[PAD, PAD]))


@pytest.mark.parametrize(("ids", "found"), [([PAD], 1), ([1, 2], 0)])
def test_placeholder_count_must_match_the_images(pipe, jpeg, ids, found):
    with pytest.raises(mmf.LayoutError, match=f"prompt has {found} media placeholder.*but 2 media item.*{PAD}"):
        pipe.process(mmf.MmInput(images=[jpeg, jpeg], input_ids=ids))


def test_ids_outside_the_vocabulary_are_refused(pipe, jpeg):
    with pytest.raises(mmf.InvalidInputError, match=r"input_ids\[0\] = -1 is outside"):
        pipe.process(mmf.MmInput(images=[jpeg], input_ids=[-1, PAD]))


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
