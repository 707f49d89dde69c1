"""Bad input: each is a typed MmError whose message names the item and the cause."""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import paddleocr_vl_images as images
import mm_framework as mmf
from mm_framework.testing import ImageBadInput
from mm_framework.testing.images import encode
from paddleocr_vl_plugin import PaddleOcrVlFamily

PRESET = mmf.preset("paddleocr_vl")
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
    with pytest.raises(mmf.MediaError, match=rf"item 1: paddleocr_vl: the {w}x{h} image.*; absolute aspect ratio must "
                                             r"be smaller than 200"):
        run([images.make("tiny_10x10.png"), _png(w, h)])
    with pytest.raises(mmf.MediaError, match="aspect ratio"):
        PIPE.num_media_tokens(w, h)


def test_the_reference_refuses_the_same_ratios():
    transformers = pytest.importorskip("transformers")
    from PIL import Image

    ip = transformers.PaddleOCRVLImageProcessorPil()
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


def test_a_bad_item_option_names_the_option_and_the_item():
    data = images.make("tiny_10x10.png")
    with pytest.raises(mmf.SpecError, match=r"item 0.*min_pixels"):
        PIPE.process(mmf.MmInput(images=[mmf.Image(data, min_pixels=0)], input_ids=[PAD]))
    with pytest.raises(mmf.SpecError, match=r"max_pixel"):
        PIPE.process(mmf.MmInput(images=[mmf.Image(data, max_pixel=10)], input_ids=[PAD]))


def test_an_item_option_below_the_spec_min_pixels_is_refused():
    # transformers would shrink every image below its own min_pixels then; the spec rule refuses.
    with pytest.raises(mmf.SpecError, match=r"item 0: processor option max_pixels=40000.*'min_pixels' must not exceed"):
        PIPE.process(mmf.MmInput(images=[mmf.Image(images.make("tiny_10x10.png"), max_pixels=40000)], input_ids=[PAD]))


def test_item_options_change_the_item_like_the_reference():
    transformers = pytest.importorskip("transformers")
    from PIL import Image

    data = images.make("page_letter_100dpi_850x1100.jpg")
    out = PIPE.process(mmf.MmInput(images=[mmf.Image(data, min_pixels=28 * 28, max_pixels=200 * 200)],
                                   input_ids=[PAD]))
    ip = transformers.PaddleOCRVLImageProcessorPil(min_pixels=28 * 28, max_pixels=200 * 200)
    want = ip(Image.open(io.BytesIO(data)), return_tensors="np")
    assert out.items[0].feature.array.tobytes() == want["pixel_values"].tobytes()


@pytest.mark.parametrize(("shape", "match"), [
    ((56, 57, 3), "not multiples of the factor 28"),
    ((56, 56, 4), "3 channels"),
    ((56, 56), "stored pixels"),
])
def test_bad_stored_pixels_are_refused(shape, match):
    family = PaddleOcrVlFamily({k: v for k, v in PRESET.items() if k != "family"})
    with pytest.raises(mmf.InvalidInputError, match=match):
        family.mm_features_from_pixels(np.zeros(shape, np.uint8))
