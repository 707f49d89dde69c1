"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import pytest

from . import deepseek_ocr2_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput

SPEC = mmf.preset("deepseek_ocr2")
IMAGE = SPEC["image_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return deepseek_ocr2_images.make("rgb_640x480.jpg")


class TestImageBadInput(ImageBadInput):
    @pytest.fixture
    def family_spec(self):
        return SPEC

    @pytest.fixture
    def make_image(self):
        return deepseek_ocr2_images.make


def test_strip_with_an_empty_global_view_is_refused_before_decoding(pipe, jpeg):
    """3000x1 scales to 1024x0 (transformers raises a ValueError on the empty size); the plan
    refuses it, so counting without pixels refuses it too."""
    strip = deepseek_ocr2_images.make("strip_3000x1.png")
    inp = mmf.MmInput(images=[jpeg, strip], input_ids=[IMAGE, IMAGE])
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(mmf.MediaError, match=r"item 1: deepseek_ocr2: the 3000x1 image's global view rounds to "
                                                 r"an empty 1024x0"):
            run(inp)


def test_bad_item_option_names_the_option_and_item(pipe, jpeg):
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option crop_to_patches='no'.*must be true or false"):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, crop_to_patches="no")], input_ids=[IMAGE]))
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option min_patches=7.*exceeds max_patches=6"):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, min_patches=7)], input_ids=[IMAGE]))
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option 'tile_size' is not one"):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, tile_size=3)], input_ids=[IMAGE]))


def test_crop_mode_mixed_within_one_request_cannot_stack(pipe):
    """Without crops the global view is tile_size square, with them size square: the model
    kwargs of one request stack the global views, so mixing is refused by name (a
    request-level option works)."""
    big = deepseek_ocr2_images.make("rgb_1280x960.jpg")
    out = pipe.process(mmf.MmInput(images=[mmf.Image(big, crop_to_patches=False), big], input_ids=[IMAGE, IMAGE]))
    assert [it.aux["pixel_values"].shape for it in out.items] == [(3, 768, 768), (3, 1024, 1024)]
    with pytest.raises(mmf.UnsupportedError, match=r"global views of one request differ in size \(\[768, 1024\]"):
        pipe.model_kwargs(out)
    whole = pipe.process(mmf.MmInput(images=[big, big], input_ids=[IMAGE, IMAGE], options={"crop_to_patches": False}))
    assert pipe.model_kwargs(whole)["pixel_values"].shape == (2, 3, 768, 768)


def test_item_option_switches_cropping_for_one_image(pipe):
    big = deepseek_ocr2_images.make("rgb_1280x960.jpg")
    out = pipe.process(mmf.MmInput(images=[mmf.Image(big, max_patches=4), big], input_ids=[IMAGE, IMAGE]))
    assert [(g.cols, g.rows) for g in (it.geometry for it in out.items)] == [(2, 2), (3, 2)]
    assert [it.feature.shape[0] for it in out.items] == [4, 6]
