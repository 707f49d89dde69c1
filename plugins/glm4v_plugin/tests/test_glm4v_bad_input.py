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
