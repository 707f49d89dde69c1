"""Bad input: each a typed MmError whose message names the item (or the field) and the cause."""

from __future__ import annotations

import numpy as np
import pytest

from . import gemma4_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput
from gemma4_plugin import Gemma4Family

SPEC = mmf.preset("gemma4")
IMAGE = SPEC["image_token_id"]
VIDEO = SPEC["video_token_id"]
FRAMES = np.zeros((6, 32, 48, 3), np.uint8)


@pytest.fixture(scope="module")
def pipe():
    return mmf.pipeline_from_spec(SPEC)


@pytest.fixture(scope="module")
def jpeg():
    return gemma4_images.make("rgb_640x480.jpg")


class TestImageBadInput(ImageBadInput):
    @pytest.fixture
    def family_spec(self):
        return SPEC

    @pytest.fixture
    def make_image(self):
        return gemma4_images.make


def test_image_start_tokens_are_not_placeholders(pipe, jpeg):
    with pytest.raises(mmf.LayoutError, match=f"prompt has 0 image placeholder.*but 2 image item.*{IMAGE}"):
        pipe.process(mmf.MmInput(images=[jpeg, jpeg], input_ids=[SPEC["boi_token_id"]] * 2))


@pytest.mark.parametrize(("option", "match"), [
    ({"max_soft_tokens": "many"}, r"item 0: processor option max_soft_tokens='many'.*must be an integer"),
    ({"max_soft_tokens": 100}, r"item 0: processor option max_soft_tokens=100.*must be one of \[70, 140"),
    ({"max_soft_tokens": 0}, r"item 0: processor option max_soft_tokens=0.*"),
    ({"patch_size": 8}, r"item 0: processor option 'patch_size' is not one"),
])
def test_bad_item_option_names_the_option_and_item(pipe, jpeg, option, match):
    with pytest.raises(mmf.SpecError, match=match):
        pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, **option)], input_ids=[IMAGE]))


def test_item_option_changes_one_image(pipe, jpeg):
    out = pipe.process(mmf.MmInput(images=[mmf.Image(jpeg, max_soft_tokens=70), jpeg], input_ids=[IMAGE, IMAGE]))
    assert [(g.h, g.w) for g in (it.geometry for it in out.items)] == [(21, 27), (42, 57)]
    kwargs = pipe.model_kwargs(out)
    # Padded to the longer budget: the 70-token image's rows past its 567 patches are zero at -1.
    assert kwargs["pixel_values"].shape == (2, 2520, 768)
    assert not kwargs["pixel_values"][0, 21 * 27:].any() and (kwargs["image_position_ids"][0, 21 * 27:] == -1).all()


def test_request_option_applies_to_every_image(pipe, jpeg):
    out = pipe.process(mmf.MmInput(images=[jpeg], input_ids=[IMAGE], options={"max_soft_tokens": 1120}))
    assert out.items[0].feature.array.shape == (10080, 768)
    with pytest.raises(mmf.SpecError, match=r"processor option max_soft_tokens=-3"):
        pipe.process(mmf.MmInput(images=[jpeg], input_ids=[IMAGE], options={"max_soft_tokens": -3}))


@pytest.mark.parametrize(("fields", "match"), [
    ({"max_soft_tokens": 281}, r"max_soft_tokens.*must be one of \[70, 140, 280, 560, 1120\]"),
    ({"patch_size": 0}, r"patch_size"),
    ({"patch_size": 65}, r"patch_size"),
    ({"pooling_kernel_size": 5}, r"pooling_kernel_size"),
    ({"boi_token_id": IMAGE}, r"eoi_token_id.*must differ"),
    ({"do_rescale": False, "do_normalize": False}, r"do_normalize.*cannot both be false"),
    ({"image_std": [1.0, 0.0, 1.0]}, r"image_std"),
    ({"resample": "nearest"}, r"resample"),
    ({"backend": "cuda"}, r"backend"),
    ({"image_seq_length": 280}, r"image_seq_length"),
    ({"video_max_soft_tokens": 100}, r"video_max_soft_tokens.*must be one of"),
    ({"video_fps": 2.0}, r"video_fps.*mutually exclusive"),
    ({"video_num_frames": 0}, r"video_num_frames"),
    ({"video_token_id": IMAGE}, r"video_token_id.*must differ"),
    ({"video_do_rescale": False, "video_do_normalize": False}, r"video_do_normalize.*cannot both be false"),
    ({"video_resample": "nearest"}, r"video_resample"),
    ({"timestamp_token_ids": {"0": 1}}, r"timestamp_token_ids.*must map exactly"),
    ({"timestamp_token_ids": {**SPEC["timestamp_token_ids"], ":": -1}}, r"timestamp_token_ids.*token ids in"),
    ({"timestamp_token_ids": {**SPEC["timestamp_token_ids"], " ": VIDEO}}, r"timestamp_token_ids.*marker ids"),
])
def test_bad_spec_names_the_field(fields, match):
    with pytest.raises(mmf.SpecError, match=match):
        mmf.pipeline_from_spec({**SPEC, **fields})


@pytest.mark.parametrize("shape", [(47, 48, 3), (48, 47, 3), (48 * 60, 48 * 60, 3), (48, 48, 4), (48, 48)])
def test_stored_pixels_of_a_size_no_target_has_are_refused(shape):
    family = Gemma4Family({k: v for k, v in SPEC.items() if k != "family"})
    with pytest.raises(mmf.MediaError):
        family.mm_features_from_pixels(np.zeros(shape, np.uint8))


@pytest.mark.parametrize(("spec", "video", "match"), [
    # default_sample_indices_fn refuses more frames than the clip has.
    ({}, mmf.VideoFrames(FRAMES, fps=10.0), r"item 0: video: cannot sample 32 frames from a clip of 6"),
    # Sampling by rate needs the clip's rate.
    ({"video_num_frames": None, "video_fps": 2.0}, mmf.VideoFrames(FRAMES), r"item 0: video: sampling at 2.0 fps"),
])
def test_unsampleable_clip_names_the_item(spec, video, match):
    pipe = mmf.pipeline_from_spec({**SPEC, **spec})
    with pytest.raises(mmf.MediaError, match=match):
        pipe.process(mmf.MmInput(videos=[video], input_ids=[VIDEO]))


def test_video_placeholders_must_match_the_videos(pipe, jpeg):
    clip = mmf.VideoFrames(FRAMES, fps=10.0)
    with pytest.raises(mmf.LayoutError, match=f"prompt has 0 video placeholder.*but 1 video item.*{VIDEO}"):
        pipe.process(mmf.MmInput(images=[jpeg], videos=[clip], input_ids=[IMAGE], options={"num_frames": 2}))


def test_bad_video_option_names_the_option_and_item(pipe):
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option num_frames=0.*video_num_frames"):
        pipe.process(mmf.MmInput(videos=[mmf.Video(mmf.VideoFrames(FRAMES), num_frames=0)], input_ids=[VIDEO]))
