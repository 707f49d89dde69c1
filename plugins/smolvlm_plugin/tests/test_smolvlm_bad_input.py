"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import pytest

from . import smolvlm_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput

SPEC = mmf.preset("smolvlm_256m_instruct")
IMAGE = SPEC["image_token_id"]


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return smolvlm_images.make("rgb_640x480.jpg")


class TestImageBadInput(ImageBadInput):
    @pytest.fixture
    def family_spec(self):
        return SPEC

    @pytest.fixture
    def make_image(self):
        return smolvlm_images.make


def test_bad_item_option_names_the_option_and_item(pipe, jpeg):
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option do_image_splitting='no'.*must be true or false"):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, do_image_splitting="no")], input_ids=[IMAGE]))
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option 'max_image_size' is not one"):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, max_image_size=3)], input_ids=[IMAGE]))


def test_grid_beyond_the_markers_is_refused_before_decoding(jpeg):
    """Without the longest-edge resize a large image needs <row_7_col_1> and beyond, which the
    tokenizer lacks (transformers would tokenize the marker as text); the plan refuses it, so
    counting without pixels refuses it too."""
    pipe = mmf.pipeline_from_spec({**SPEC, "do_resize": False})
    big = smolvlm_images.make("large_4000x3000.jpg")
    inp = mmf.MmInput(images=[jpeg, big], input_ids=[IMAGE, IMAGE])
    message = r"item 1: smolvlm: the 4000x3000 image splits into 6x8 tiles, beyond the 6x6 <row_r_col_c> markers"
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(mmf.MediaError, match=message):
            run(inp)
    assert pipe.num_media_tokens(3072, 3072) > 0


def test_item_option_switches_splitting_for_one_image(pipe, jpeg):
    out = pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, do_image_splitting=False), jpeg], input_ids=[IMAGE, IMAGE]))
    assert [(g.rows, g.cols) for g in (it.geometry for it in out.items)] == [(0, 0), (3, 4)]
    assert [it.feature.shape[0] for it in out.items] == [1, 13]
