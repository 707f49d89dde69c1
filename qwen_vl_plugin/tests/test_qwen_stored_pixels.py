"""The stored-pixel hooks: the resized uint8 image rebuilds the exact features (the
contract of ``mm_stored_pixels`` / ``mm_features_from_pixels``), and bad arrays are refused."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from qwen_vl_plugin import QwenVlFamily

from . import golden_images


def family_of(spec):
    """The family object ``spec`` builds, called directly (its hooks without the engine)."""
    return QwenVlFamily({k: v for k, v in spec.items() if k != "family"})


NAMES = ["tiny_10x10.png", "exact_448x448.png", "rgb_640x480.jpg", "tall_20x3000.png", "rgba_640x480.png"]


@pytest.mark.parametrize("preset", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
@pytest.mark.parametrize("name", NAMES)
def test_features_from_stored_pixels_equal_processing(preset, name):
    spec = mmf.preset(preset)
    pipe, family = mmf.pipeline_from_spec(spec), family_of(spec)
    inp = mmf.MmInput(images=[golden_images.make(name)])
    item = family.mm_process_item(media=pipe.decode(inp)[1][0])
    pixels = family.mm_stored_pixels(media=pipe.decode(inp)[1][0])
    assert pixels.dtype == np.uint8 and (pixels.shape[1], pixels.shape[0]) == item.size
    again = family.mm_features_from_pixels(pixels=pixels.copy())
    assert again.feature == item.feature and again.aux == item.aux
    assert (again.geometry, again.size) == (item.geometry, item.size)


def test_pipeline_stored_pixels_is_a_count_plus_pixels():
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    images = [golden_images.make("rgb_640x480.jpg"), golden_images.make("tiny_10x10.png")]
    inp = mmf.MmInput(images=images, input_ids=[1, 151655, 151655, 2])
    out, pixels = pipe.stored_pixels(inp)
    assert out == pipe.count_tokens(inp)
    assert [(p.shape[1], p.shape[0]) for p in pixels] == [it.processed_size for it in out.items]


@pytest.mark.parametrize(
    "pixels, match",
    [
        (np.zeros((56, 56, 3), np.float32), "expected a uint8 array"),
        (np.zeros((56, 56), np.uint8), "HWC"),
        (np.zeros((56, 57, 3), np.uint8), "56x57|57x56"),
        ([[0]], "expected a numpy uint8 HWC array"),
    ],
)
def test_bad_stored_pixels_are_refused(pixels, match):
    with pytest.raises(mmf.InvalidInputError, match=match):
        family_of(mmf.preset("qwen2_vl")).mm_features_from_pixels(pixels=pixels)
