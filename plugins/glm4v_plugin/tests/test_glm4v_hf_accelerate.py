"""``mm_framework.hf.accelerate`` on the GLM-4V image processors (GLM-4.1V/4.5V's and
GLM-4.6V's), live against transformers 5.24: each served call gives the reference's
``BatchFeature`` (``pixel_values`` and ``image_grid_thw``: keys, types, dtypes, shapes,
bytes); a call it cannot mirror goes to the processor and is counted.

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

from . import glm4v_images as images
from . import glm4v_reference as ref
from .test_glm4v_live_parity import PRESET

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

BACKENDS = ["pil"] + (["torchvision"] if importlib.util.find_spec("torchvision") is not None else [])
HAS_TORCH = importlib.util.find_spec("torch") is not None
NAMES = ["photo_1280x960.jpg", "tiny_27x5.png", "thin_tall_20x3000.png", "rgba_640x480.png", "photo_1280x960.jpg"]
CALLS = [{"return_tensors": "np"}] + ([{"return_tensors": "pt"}] if HAS_TORCH else [])


def _images():
    return [Image.open(io.BytesIO(images.make(n))) for n in NAMES]


pytestmark = pytest.mark.usefixtures("mm_hf_stats")


@pytest.mark.parametrize("model", ["glm4v", "glm46v"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("call", CALLS, ids=lambda c: c["return_tensors"])
def test_served_calls_equal_the_processor(model, backend, call):
    spec = {**PRESET, "backend": backend}
    want = ref.image_processor(spec, model)(images=_images(), **call)
    acc = hf.accelerate(ref.image_processor(spec, model), strict=True)
    got = acc(images=_images(), **call)
    assert_same_batch(want, got, ["pixel_values", "image_grid_thw"])
    name = ref.CLASSES[backend, model]
    assert hf.stats() == {"served": {name: 1}, "fallbacks": {}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_option_it_does_not_take_goes_to_the_processor(backend):
    spec = {**PRESET, "backend": backend}
    acc = hf.accelerate(ref.image_processor(spec), strict=True)
    call = {"return_tensors": "np", "size": {"shortest_edge": 784, "longest_edge": 200704}}
    want, got = ref.image_processor(spec)(images=_images(), **call), acc(images=_images(), **call)
    assert all(np.asarray(want[k]).tobytes() == np.asarray(got[k]).tobytes() for k in want)
    # The family takes no per-item pixel bounds (GLM's processors have no min_pixels / max_pixels).
    assert list(hf.stats()["fallbacks"]) == [f"{ref.CLASSES[backend, 'glm4v']}: size / min_pixels / max_pixels on a "
                                             "processor whose size is not its pixel bounds"]
