"""``mm_framework.hf.accelerate`` on DeepSeek-OCR 2's image processors, live against transformers
5.24: each served call gives the reference's ``BatchFeature`` (``pixel_values``,
``num_local_patches`` and, with crops, ``pixel_values_local``: keys, types, dtypes, shapes,
bytes), the crop options per call included. Without ``return_tensors`` the processor returns
per-image lists, so those calls go to it, counted.

PIL backend always; the torchvision one when torchvision imports; ``return_tensors="pt"`` when
torch does.
"""

from __future__ import annotations

import importlib.util
import io

import pytest

import mm_framework as mmf
from mm_framework import hf
from mm_framework.testing import assert_same_batch

from . import deepseek_ocr2_images as images
from . import deepseek_ocr2_reference as ref

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

CLASSES = {"pil": "DeepseekOcr2ImageProcessorPil", "torchvision": "DeepseekOcr2ImageProcessor"}
BACKENDS = ["pil"] + (["torchvision"] if importlib.util.find_spec("torchvision") is not None else [])
TENSORS = ["np"] + (["pt"] if importlib.util.find_spec("torch") is not None else [])
NAMES = ["tiny_10x10.png", "one_1x1.png", "tile_768x768.png", "above_tile_769x769.png", "rgb_640x480.jpg"]
CALLS = [{}, {"crop_to_patches": False}, {"max_patches": 4}, {"min_patches": 3, "max_patches": 9}]

pytestmark = pytest.mark.usefixtures("mm_hf_stats")


def _images():
    return [Image.open(io.BytesIO(images.make(n))) for n in NAMES]


def _spec(backend: str) -> dict:
    return {**mmf.preset("deepseek_ocr2"), "backend": backend}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("tensors", TENSORS)
@pytest.mark.parametrize("call", CALLS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_served_calls_equal_the_processor(backend, tensors, call):
    call = {"return_tensors": tensors, **call}
    want = ref.image_processor(_spec(backend))(images=_images(), **call)
    got = hf.accelerate(ref.image_processor(_spec(backend)), strict=True)(images=_images(), **call)
    assert_same_batch(want, got)
    assert list(want.keys())[:2] == ["pixel_values", "num_local_patches"]
    assert hf.stats() == {"served": {CLASSES[backend]: 1}, "fallbacks": {}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_without_return_tensors_the_processor_answers(backend):
    acc = hf.accelerate(ref.image_processor(_spec(backend)), strict=True)
    want, got = ref.image_processor(_spec(backend))(images=_images()), acc(images=_images())
    assert list(want.keys()) == list(got.keys())
    assert all(type(got[k]) is list for k in got)
    assert hf.stats() == {"served": {}, "fallbacks": {
        f"{CLASSES[backend]}: return_tensors None: the processor returns per-image lists then": 1}}
