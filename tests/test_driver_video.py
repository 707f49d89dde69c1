"""The driver with videos: capability gate, every video source form, prompt order across
modalities, limits, dedupe and token counts, through a tiny in-process video family."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.testing import assert_same_output, mp4

from .conftest import png_bytes

IMG_ID, VID_ID = 1, 2
RNG = np.random.default_rng(5)
FRAMES = RNG.integers(0, 256, (6, 16, 24, 3), dtype=np.uint8)


class ToyVideoFamily:
    """Images: one token, the mean colour. Videos: every other frame, one token per kept
    frame, each the frame's mean colour."""

    def __init__(self, params):
        self.params = params

    @mmp.hookimpl
    def mm_capabilities(self):
        named = {"image": IMG_ID} if self.params.get("images_named_only") else {"image": IMG_ID, "video": VID_ID}
        return mmp.Capabilities(modalities=("image", "video"), placeholders=named)

    @mmp.hookimpl
    def mm_sample_frames(self, header):
        return list(range(0, header.total_frames, 2))

    @mmp.hookimpl
    def mm_process_item(self, media):
        if isinstance(media, mmp.VideoClip):
            feat = media.frames.reshape(media.num_frames, -1, 3).mean(axis=1)
            return mmp.ProcessedItem(mmp.Tensor.f32(feat), geometry=mmf.Grid(media.num_frames, 1, 1),
                                     size=(media.width, media.height))
        return mmp.ProcessedItem(mmp.Tensor.f32(media.rgb.reshape(-1, 3).mean(axis=0, keepdims=True)),
                                 geometry=mmf.Grid(1, 1, 1), size=(media.width, media.height))

    @mmp.hookimpl
    def mm_plan_item(self, header):
        t = len(range(0, header.total_frames, 2)) if isinstance(header, mmp.ClipHeader) else 1
        return mmp.ItemPlan(mmf.Grid(t, 1, 1), (header.width, header.height))

    @mmp.hookimpl
    def mm_layout(self, input_ids, geometries, modalities):
        marks = {"image": IMG_ID, "video": VID_ID}
        return mmp.layout_by_placeholders(input_ids, marks, modalities,
                                          lambda i: mmp.Repeat(marks[modalities[i]], geometries[i].t))


class ToyVideoPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toyvid", ToyVideoFamily)


@pytest.fixture
def pipe():
    name = mmf.plugins.register(ToyVideoPlugin(), name="toyvid-plugin")
    try:
        yield mmf.pipeline_from_spec({"family": "toyvid"})
    finally:
        mmf.plugins.unregister(name)


def encode_clip(frames: np.ndarray, fps: int = 10) -> bytes:
    pytest.importorskip("av")
    return mp4(frames, fps)


def test_family_without_video_rejects_a_video_before_any_io(toy_pipe):
    match = r"item 1 \(https://unreachable.invalid/x.mp4\): family 'toy' does not take video"
    with pytest.raises(mmf.UnsupportedError, match=match) as e:
        toy_pipe.process(mmf.MmInput(images=[png_bytes(4, 4)], videos=["https://unreachable.invalid/x.mp4"],
                                     input_ids=[1]))
    assert e.value.item == 1


def test_items_come_out_in_prompt_order_with_their_modality(pipe):
    img = png_bytes(8, 8)
    out = pipe.process(mmf.MmInput(images=[img, img], videos=[FRAMES], input_ids=[7, IMG_ID, 8, VID_ID, 9, IMG_ID]))
    assert [it.modality for it in out.items] == ["image", "video", "image"]
    assert out.offsets == ((1, 1), (3, 5), (7, 7))
    assert out.input_ids.tolist() == [7, 1, 8, 2, 2, 2, 9, 1]
    video = out.items[1]
    assert video.feature.shape == (3, 3) and video.size == (24, 16) and video.geometry == mmf.Grid(3, 1, 1)
    want = FRAMES[::2].reshape(3, -1, 3).mean(axis=1).astype(np.float32)
    assert np.array_equal(video.feature.array, want)


def test_every_decoded_clip_form_gives_the_same_item(pipe):
    forms = [FRAMES, list(FRAMES), [Image.fromarray(f) for f in FRAMES], mmf.VideoFrames(FRAMES, fps=10.0),
             [png_bytes_of(f) for f in FRAMES]]
    outs = [pipe.process(mmf.MmInput(videos=[v], input_ids=[VID_ID])) for v in forms]
    for k, out in enumerate(outs[1:], 1):
        assert out.items[0].feature == outs[0].items[0].feature, f"form {k}"
    # The hash covers the metadata too: fps changes it.
    assert outs[0].items[0].hash == outs[1].items[0].hash != outs[3].items[0].hash


def png_bytes_of(frame: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, "PNG")
    return buf.getvalue()


def test_encoded_clip_decodes_only_the_chosen_frames(pipe):
    data = encode_clip(FRAMES)
    out = pipe.process(mmf.MmInput(videos=[data], input_ids=[VID_ID]))
    assert out.items[0].geometry == mmf.Grid(3, 1, 1) and out.items[0].hash == mmf.content_hash(data)
    counted = pipe.count_tokens(mmf.MmInput(videos=[data], input_ids=[VID_ID]))
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.items[0].geometry == mmf.Grid(3, 1, 1)
    assert pipe.num_media_tokens(24, 16, frames=6, fps=10.0) == 3


def test_video_limits_name_the_item(pipe):
    tight = mmf.pipeline_from_spec({"family": "toyvid"}, limits=mmf.Limits(max_video_frames=5))
    with pytest.raises(mmf.LimitExceededError, match="item 1: video: 6 frames, above the limit of 5 frames per clip"):
        tight.process(mmf.MmInput(images=[png_bytes(4, 4)], videos=[FRAMES], input_ids=[IMG_ID, VID_ID]))
    pixels = mmf.pipeline_from_spec({"family": "toyvid"}, limits=mmf.Limits(max_video_pixels=6 * 16 * 24 - 1))
    with pytest.raises(mmf.LimitExceededError, match="item 0: video: 6 frames of 24x16"):
        pixels.process(mmf.MmInput(videos=[FRAMES], input_ids=[VID_ID]))


@pytest.mark.parametrize("bad, match", [
    (np.zeros((2, 4, 4), np.uint8), r"uint8 \[T, H, W, 3\]"),
    ([np.zeros((4, 4, 3), np.uint8), np.zeros((5, 4, 3), np.uint8)], "frame 1 is"),
    (mmf.VideoFrames(FRAMES, indices=[0, 1]), "need total_frames"),
    (mmf.VideoFrames(FRAMES, fps=-1.0), "fps must be a positive finite number"),
])
def test_bad_decoded_clips_are_rejected(pipe, bad, match):
    with pytest.raises(mmf.InvalidInputError, match=f"item 0: video: .*{match}"):
        pipe.process(mmf.MmInput(videos=[bad], input_ids=[VID_ID]))


def test_undecodable_clip_is_a_media_error(pipe):
    pytest.importorskip("av")
    with pytest.raises(mmf.MediaError, match="item 0: video"):
        pipe.process(mmf.MmInput(videos=[b"not a clip at all"], input_ids=[VID_ID]))


def test_same_clip_twice_is_processed_once_and_cached_across_requests(pipe):
    cache = mmf.FeatureCache(1 << 20)
    cached = mmf.pipeline_from_spec({"family": "toyvid"}, cache=cache)
    out = cached.process(mmf.MmInput(videos=[FRAMES, FRAMES], input_ids=[VID_ID, VID_ID]))
    assert [t.cached for t in out.timings.items] == [False, True]
    again = cached.process(mmf.MmInput(videos=[FRAMES], input_ids=[VID_ID]))
    assert again.timings.items[0].cached and cache.stats().entries == 1
    assert_same_output(again, pipe.process(mmf.MmInput(videos=[FRAMES], input_ids=[VID_ID])), "cached video")


def test_video_items_say_how_many_frames_they_used(pipe):
    out = pipe.process(mmf.MmInput(videos=[FRAMES], input_ids=[VID_ID]))
    assert out.items[0].frames == 3 and "3 frames" in repr(out.items[0])
    image = pipe.process(mmf.MmInput(images=[png_bytes(4, 4)], input_ids=[IMG_ID]))
    assert image.items[0].frames is None


def test_no_prompt_is_one_placeholder_per_item_images_first(pipe):
    img = png_bytes(8, 8)
    out = pipe.process(mmf.MmInput(images=[img], videos=[FRAMES]))
    assert out.input_ids.tolist() == [1, 2, 2, 2] and [it.modality for it in out.items] == ["image", "video"]


def test_no_prompt_for_a_modality_without_a_placeholder_names_it(pipe):
    named = mmf.pipeline_from_spec({"family": "toyvid", "images_named_only": True})
    with pytest.raises(mmf.InvalidInputError, match="family 'toyvid' names no video placeholder to build a default"):
        named.process(mmf.MmInput(images=[png_bytes(4, 4)], videos=["https://unreachable.invalid/x.mp4"]))
    assert named.process(mmf.MmInput(images=[png_bytes(4, 4)])).input_ids.tolist() == [1]
