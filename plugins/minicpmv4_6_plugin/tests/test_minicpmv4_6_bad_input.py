"""Bad input: each a typed MmError whose message names the item (or the field) and the cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import minicpmv4_6_images
import mm_framework as mmf
from mm_framework import plugin as mmp
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


VIDEO = SPEC["video_token_id"]
GOLDEN_CLIP = Path(__file__).resolve().parent / "golden_video" / "clips" / "c64x48_30f_12fps.mp4"


@pytest.fixture(scope="module")
def clip():
    pytest.importorskip("av")
    return GOLDEN_CLIP.read_bytes()


def test_a_spec_without_video_token_id_takes_no_video(clip):
    pipe = mmf.pipeline_from_spec({**SPEC, "video_token_id": None})
    with pytest.raises(mmf.MmError, match="video"):
        pipe.process(mmf.MmInput(videos=[clip], input_ids=[VIDEO]))


def test_video_without_a_frame_rate_is_refused(pipe):
    import numpy as np

    frames = np.zeros((3, 20, 20, 3), dtype=np.uint8)
    with pytest.raises(mmf.MediaError, match=r"item 0.*needs the clip's frame rate"):
        pipe.process(mmf.MmInput(videos=[mmf.VideoFrames(frames)], input_ids=[VIDEO]))


def test_bytes_that_are_no_video_are_refused(pipe, clip):
    with pytest.raises(mmf.MediaError, match="item 0"):
        pipe.process(mmf.MmInput(videos=[b"not a video at all"], input_ids=[VIDEO]))


def test_video_placeholders_must_match_the_videos(pipe, clip):
    with pytest.raises(mmf.LayoutError, match=f"prompt has 2 video placeholder.*but 1 video item.*{VIDEO}"):
        pipe.process(mmf.MmInput(videos=[clip], input_ids=[VIDEO, VIDEO]))


@pytest.mark.parametrize(("option", "match"), [
    ({"max_num_frames": 0}, r"item 0: processor option max_num_frames=0 for this video.*greater than zero"),
    ({"downsample_mode": "8x"}, r"item 0: processor option downsample_mode='8x'.*must be one of"),
    ({"stack_frames": 17}, r"item 0: processor option stack_frames=17 for this video.*must be <= 16"),
    ({"slice_mode": False}, r"item 0: processor option 'slice_mode' is not one"),
])
def test_bad_video_option_names_the_option_and_item(pipe, clip, option, match):
    with pytest.raises(mmf.SpecError, match=match):
        pipe.process(mmf.MmInput(videos=[mmf.Video(clip, **option)], input_ids=[VIDEO]))


@pytest.mark.parametrize(("change", "match"), [
    ({"video_token_id": IMAGE}, r"must all differ"),
    ({"video_max_num_frames": 0}, r"video_max_num_frames"),
    ({"video_stack_frames": 0}, r"video_stack_frames"),
    ({"video_downsample_mode": "2x"}, r"video_downsample_mode"),
    ({"video_scale_resolution": 4096, "video_max_slice_nums": 64}, r"video_scale_resolution.*exceed"),
])
def test_bad_video_spec_is_refused_naming_the_field(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        mmf.pipeline_from_spec({**SPEC, **change})


def test_a_spec_without_video_refuses_a_clip_header():
    """The driver refuses videos for such a spec first (Capabilities); the family's own hooks
    refuse one too, naming why."""
    from minicpmv4_6_plugin.family import MiniCPMV46Family

    family = MiniCPMV46Family({k: v for k, v in {**SPEC, "video_token_id": None}.items() if k != "family"})
    header = mmp.ClipHeader(total_frames=10, fps=5.0, width=32, height=24)
    with pytest.raises(mmf.UnsupportedError, match="this minicpmv4_6 spec has no video_token_id: it takes no videos"):
        family.mm_sample_frames(header)


def test_a_duration_longer_than_the_frames_is_refused():
    """A container whose duration disagrees with its frame count would make the time sampler pick
    frames past the clip (transformers indexes past it too)."""
    from minicpmv4_6_plugin.video import sample_indices

    with pytest.raises(mmf.MediaError, match=r"video: sampling by time picks frames \[2, 3, 4\] of a 2-frame clip "
                                             r"at 1.0 fps lasting 5.0 s"):
        sample_indices(2, 1.0, 5.0, 64)
