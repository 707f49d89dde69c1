"""Bad input: each a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import numpy as np
import pytest

from . import kimi_k25_images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput
from kimi_k25_plugin import KimiK25Family
from kimi_k25_plugin.video_spec import VIDEO_FIELDS

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


# -- video ----------------------------------------------------------------------

VIDEO = SPEC["video_token_id"]


@pytest.fixture(scope="module")
def clip():
    from . import kimi_k25_clips

    pytest.importorskip("av")
    return kimi_k25_clips.make("h264_64x36_7f_30fps")


@pytest.fixture(scope="module")
def with_ids():
    from . import kimi_k25_reference

    spec = {**SPEC, "video_text_token_ids": kimi_k25_reference.text_ids(SPEC)}
    return mmf.pipeline_from_spec(spec)


def test_video_ids_without_the_text_table_are_refused(pipe, clip):
    with pytest.raises(mmf.UnsupportedError, match=r"timestamp text whose ids only the Kimi tokenizer knows; give "
                                                   r"the spec's video_text_token_ids"):
        pipe.process(mmf.MmInput(videos=[clip], input_ids=[1, VIDEO, 2]))
    with pytest.raises(mmf.UnsupportedError, match=r"video_text_token_ids"):
        pipe.count_tokens(mmf.MmInput(videos=[clip]))


@pytest.mark.parametrize(("video", "spec", "error", "match"), [
    (np.zeros((6, 20, 30, 3), np.uint8), {}, mmf.MediaError, r"item 0: .*needs the clip's source fps"),
    (mmf.VideoFrames(np.zeros((6, 20, 30, 3), np.uint8), fps=2.0), {"video_fps": 10.0}, mmf.MediaError,
     r"item 0: .*asks for 30 frames, more than the clip has"),
    (b"not a video at all", {}, mmf.MediaError, r"item 0"),
])
def test_unsampleable_clips_name_the_item(video, spec, error, match):
    with pytest.raises(error, match=match):
        mmf.pipeline_from_spec({**SPEC, **spec}).process(mmf.MmInput(videos=[video]))


def test_video_placeholders_must_match_the_videos(with_ids, clip):
    with pytest.raises(mmf.LayoutError, match=r"prompt has 2 video placeholder\(s\) but 1 video item\(s\)"):
        with_ids.process(mmf.MmInput(videos=[clip], input_ids=[VIDEO, VIDEO]))


def test_video_needs_the_video_fields(clip):
    spec = {k: v for k, v in SPEC.items() if k not in VIDEO_FIELDS}
    with pytest.raises(mmf.UnsupportedError, match=r"item 0.*video"):
        mmf.pipeline_from_spec(spec).process(mmf.MmInput(videos=[clip]))


def test_video_takes_no_item_options(pipe, clip):
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option 'fps'"):
        pipe.process(mmf.MmInput(videos=[mmf.Video(clip, fps=1.0)]))


@pytest.mark.parametrize(("change", "match"), [
    ({"video_text_token_ids": {"video": [5]}}, r"'video_text_token_ids' must map exactly the 1063 pieces"),
    ({"video_text_token_ids": {p: [-1] for p in ("video", ":", ".", *(f"{i:02d}" for i in range(60)),
                                                 *(f"{i:03d}" for i in range(1000)))}},
     r"piece 'video' must map to a non-empty list of ids"),
    ({"video_token_id": None}, r"need video_token_id"),
    ({"video_sample_frames": False}, r"'video_fps' has no effect without video_sample_frames"),
    ({"video_fps": None}, r"'video_fps' is required when video_sample_frames is true"),
    ({"media_content_token_id": 163602}, r"must be five different ids"),
    ({"media_end_token_id": None}, r"'media_end_token_id' is required with video_token_id"),
    ({"video_max_size_per_side": 100000}, r"'video_max_size_per_side' =100000: a 1400000x1400000 frame canvas"),
])
def test_bad_video_fields_are_refused(change, match):
    with pytest.raises(mmf.SpecError, match=match):
        mmf.pipeline_from_spec({**SPEC, **change})
