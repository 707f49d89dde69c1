"""``mm_framework.hf.accelerate`` on PaddleOCR-VL's image processors, live against transformers
5.24: each served call gives the reference's ``BatchFeature`` (``pixel_values`` and
``image_grid_thw``: keys, types, dtypes, shapes, bytes), with per-call pixel bounds; a call it
cannot mirror goes to the processor and is counted.

PIL backend always; the torchvision one when torchvision imports; ``return_tensors="pt"`` when
torch does.
"""

from __future__ import annotations

import importlib.util
import io

import numpy as np
import pytest

from mm_framework import hf
from mm_framework.testing import assert_same_batch

from . import paddleocr_vl_images as images
from . import paddleocr_vl_reference as ref
from .test_paddleocr_vl_live_parity import PRESET

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

BACKENDS = ["pil"] + (["torchvision"] if importlib.util.find_spec("torchvision") is not None else [])
HAS_TORCH = importlib.util.find_spec("torch") is not None
NAMES = ["page_letter_100dpi_850x1100.jpg", "tiny_27x5.png", "thin_tall_20x3000.png", "photo_640x480.jpg",
         "cmyk_640x480.jpg"]
CALLS = [{}, {"max_pixels": 200_704}, {"min_pixels": 400_000, "max_pixels": 800_000},
         {"size": {"shortest_edge": 3136, "longest_edge": 150_000}}]
if HAS_TORCH:
    CALLS.append({"return_tensors": "pt"})


def _images():
    return [Image.open(io.BytesIO(images.make(n))) for n in NAMES]


pytestmark = pytest.mark.usefixtures("mm_hf_stats")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call", CALLS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_served_calls_equal_the_processor(backend, call):
    spec = {**PRESET, "backend": backend}
    call = {"return_tensors": "np", **call}
    want = ref.image_processor(spec)(images=_images(), **call)
    got = hf.accelerate(ref.image_processor(spec), strict=True)(images=_images(), **call)
    assert_same_batch(want, got, ["pixel_values", "image_grid_thw"])
    assert hf.stats() == {"served": {ref.CLASSES[backend]: 1}, "fallbacks": {}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_option_it_does_not_take_goes_to_the_processor(backend):
    spec = {**PRESET, "backend": backend}
    acc = hf.accelerate(ref.image_processor(spec), strict=True)
    call = {"return_tensors": "np", "image_std": [0.3, 0.3, 0.3]}
    want, got = ref.image_processor(spec)(images=_images(), **call), acc(images=_images(), **call)
    assert all(np.asarray(want[k]).tobytes() == np.asarray(got[k]).tobytes() for k in want)
    assert list(hf.stats()["fallbacks"]) == [f"{ref.CLASSES[backend]}: option 'image_std'"]
