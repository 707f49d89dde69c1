"""Bad input: each is a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import numpy as np
import pytest

from . import glm4v_images as images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput
from mm_framework.testing.images import encode
from glm4v_plugin import Glm4vFamily

PRESET = mmf.preset("glm4_1v_9b_thinking")
PAD = PRESET["image_token_id"]
PIPE = mmf.pipeline_from_spec(PRESET)


def _png(w: int, h: int, mode: str = "RGB") -> bytes:
    from PIL import Image

    return encode(Image.new(mode, (w, h)), "PNG")


def run(data, ids=None, pipe=PIPE):
    data = data if isinstance(data, list) else [data]
    return pipe.process(mmf.MmInput(images=data, input_ids=ids or [1] + [PAD] * len(data) + [2]))


class TestImageBadInput(ImageBadInput):
    jpeg_name = "photo_640x480.jpg"
    placeholder_noun = "media"

    @pytest.fixture
    def family_spec(self):
        return PRESET

    @pytest.fixture
    def make_image(self):
        return images.make


@pytest.mark.parametrize(("w", "h"), [(1, 300), (300, 1), (2, 3000), (6000, 28)])
def test_an_aspect_ratio_above_200_once_raised_is_refused(w, h):
    # 1x300 has a ratio of 300 already; 2x3000 is 28x42000 once raised; 6000x28 is 214.
    with pytest.raises(mmf.MediaError, match=rf"item 1: glm4v: the {w}x{h} image.*; absolute aspect ratio must "
                                             r"be smaller than 200"):
        run([images.make("tiny_10x10.png"), _png(w, h)])
    with pytest.raises(mmf.MediaError, match="aspect ratio"):
        PIPE.num_media_tokens(w, h)


def test_the_reference_refuses_the_same_ratios():
    transformers = pytest.importorskip("transformers")
    from PIL import Image

    ip = transformers.Glm4vImageProcessorPil()
    for w, h in [(1, 300), (2, 3000), (6000, 28)]:
        with pytest.raises(ValueError, match="aspect ratio must be smaller than 200"):
            ip(Image.new("RGB", (w, h)), return_tensors="np")
    # 1x150 is 28x4200 once raised: a ratio of 150, which both accept.
    ip(Image.new("RGB", (1, 150)), return_tensors="np")
    assert PIPE.num_media_tokens(1, 150) > 0


def test_too_many_pixels_is_a_limit():
    pipe = mmf.pipeline_from_spec(PRESET, limits=mmf.Limits(max_image_pixels=100 * 100))
    with pytest.raises(mmf.LimitExceededError, match=r"item 0"):
        run(_png(200, 200), pipe=pipe)


def test_no_item_options_are_taken():
    # Glm4vImageProcessor has no min_pixels / max_pixels arguments: per-item options are refused by name.
    with pytest.raises(mmf.SpecError, match=r"item 0.*max_pixels"):
        PIPE.process(mmf.MmInput(images=[mmf.Image(images.make("tiny_10x10.png"), max_pixels=40000)],
                                 input_ids=[PAD]))


@pytest.mark.parametrize(("shape", "match"), [
    ((56, 57, 3), "not multiples of the factor 28"),
    ((56, 56, 4), "3 channels"),
    ((56, 56), "stored pixels"),
])
def test_bad_stored_pixels_are_refused(shape, match):
    family = Glm4vFamily({k: v for k, v in PRESET.items() if k != "family"})
    with pytest.raises(mmf.InvalidInputError, match=match):
        family.mm_features_from_pixels(np.zeros(shape, np.uint8))


def test_stored_pixels_rebuild_the_features():
    family = Glm4vFamily({k: v for k, v in PRESET.items() if k != "family"})
    data = images.make("photo_640x480.jpg")
    out = run(data)
    stored = PIPE.stored_pixels(mmf.MmInput(images=[data], input_ids=[PAD]))[1][0]
    assert stored.shape == (476, 644, 3)
    again = family.mm_features_from_pixels(stored)
    assert again.feature.array.tobytes() == out.items[0].feature.array.tobytes()


# -- video ------------------------------------------------------------------------------

VIDEO = PRESET["video_token_id"]
STAMPS = {"0": [20], "1": [21]}
VIDEO_SPEC = {**PRESET, "video_timestamp_ids": STAMPS}


def frames(n: int = 4, h: int = 48, w: int = 64, fps: float | None = 2.0) -> mmf.VideoFrames:
    rng = np.random.default_rng(n * h + w)
    return mmf.VideoFrames(rng.integers(0, 256, (n, h, w, 3), dtype=np.uint8), fps=fps)


def run_video(clip, spec=VIDEO_SPEC, ids=None):
    pipe = mmf.pipeline_from_spec(spec)
    return pipe.process(mmf.MmInput(videos=[clip], input_ids=ids or [1, VIDEO, 2]))


VIDEO_ROWS = [
    ("no fps", lambda: run_video(frames(fps=None)), mmf.MediaError, "item 0: .*needs the clip's fps"),
    ("no timestamp ids", lambda: run_video(frames(), spec=PRESET), mmf.UnsupportedError,
     "frame timestamps as text.*video_timestamp_ids"),
    ("timestamp not in the table", lambda: run_video(frames(8)), mmf.UnsupportedError,
     "timestamp '2' is not in the spec's video_timestamp_ids"),
    ("two placeholders", lambda: run_video(frames(), ids=[1, VIDEO, VIDEO, 2]), mmf.LayoutError,
     r"2 video placeholder\(s\) but 1 video item"),
    ("no placeholder", lambda: run_video(frames(), ids=[1, 2]), mmf.LayoutError,
     r"0 video placeholder\(s\) but 1 video item"),
    ("aspect ratio above 200", lambda: run_video(frames(h=1, w=300)), mmf.MediaError,
     "item 0: .*absolute aspect ratio must be smaller than 200"),
    # GLM-4.6V's sampler on a 1-frame encoded clip: golden_video/rejections.
    ("temporal patch over the frames", lambda: run_video(frames(1, fps=1.0), spec={**VIDEO_SPEC,
                                                                                   "temporal_patch_size": 3}),
     mmf.MediaError, "item 0: .*t:2 must be larger than temporal_factor:3"),
    ("spec without video", lambda: run_video(frames(), spec={**VIDEO_SPEC, "video_token_id": None}),
     mmf.UnsupportedError, "item 0: family 'glm4v' does not take video"),
]


@pytest.mark.parametrize(("why", "call", "error", "match"), VIDEO_ROWS, ids=[r[0] for r in VIDEO_ROWS])
def test_bad_video_is_refused(why, call, error, match):
    with pytest.raises(error, match=match):
        call()
