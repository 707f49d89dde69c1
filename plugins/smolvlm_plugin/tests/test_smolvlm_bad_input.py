"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from . import smolvlm_images
import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.testing import ImageBadInput
from smolvlm_plugin import SmolVLMFamily

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


VIDEO_SPEC = {**mmf.preset("smolvlm2_500m_video_instruct"), "video_token_id": 49280, "size_longest_edge": 96,
              "max_image_size": 32, "image_seq_len": 4}


@pytest.fixture(scope="module")
def clip():
    pytest.importorskip("av")
    from . import smolvlm_clips

    return smolvlm_clips.make("clip_32x48_6f_ntsc.mp4")


def test_video_prompts_are_refused_in_token_ids(clip, jpeg):
    """A video's expansion is prose the tokenizer merges with the prompt (docs/families/smolvlm.md §7):
    the request names the video, after the image."""
    pipe = mmf.pipeline_from_spec(VIDEO_SPEC)
    inp = mmf.MmInput(images=[jpeg], videos=[clip], input_ids=[IMAGE, 7, 49280])
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(mmf.UnsupportedError, match=r"item 1: a video's prompt is text in family 'smolvlm'"):
            run(inp)


def test_video_without_video_fields_is_refused(pipe, clip):
    with pytest.raises(mmf.UnsupportedError, match=r"item 0.*video"):
        pipe.process(mmf.MmInput(videos=[clip], input_ids=[IMAGE]))


def test_sampling_frames_without_a_rate_names_the_item():
    pipe = mmf.pipeline_from_spec({**VIDEO_SPEC, "video_do_sample_frames": True})
    frames = np.zeros((4, 8, 8, 3), dtype=np.uint8)
    with pytest.raises(mmf.MediaError, match=r"item 0.*smolvlm: sampling a video's frames needs its frame rate"):
        pipe.process(mmf.MmInput(videos=[frames], text="<video>"), tokenize=lambda text: [49280])


def test_images_and_videos_in_one_batch_are_refused():
    """SmolVLMProcessor returns both as pixel_values and keeps only the videos'."""
    family = SmolVLMFamily({k: v for k, v in VIDEO_SPEC.items() if k != "family"})
    tile = np.zeros((1, 3, 32, 32), dtype=np.float32)
    items = [SimpleNamespace(modality=m, feature=mmp.Tensor(tile, "f32")) for m in ("image", "video")]
    with pytest.raises(mmf.UnsupportedError, match="mixing images and videos"):
        family.mm_model_kwargs(items)
    assert family.mm_model_kwargs(items[1:])["pixel_values"].shape == (1, 1, 3, 32, 32)
