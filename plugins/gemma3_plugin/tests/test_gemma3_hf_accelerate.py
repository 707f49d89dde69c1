"""``mm_framework.hf.accelerate`` on Gemma 3's image processors, live against transformers 5.24:
each served call gives the reference's ``BatchFeature`` (``pixel_values`` and ``num_crops``:
keys, types, dtypes, shapes, bytes), pan-and-scan options per call included.

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

from . import gemma3_images
from .gemma3_reference import PAS_DEFAULTS, PREPROCESSOR_CONFIG
from .test_gemma3_live_parity import PRESET, RESAMPLE

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

BACKENDS = {"pil": "Gemma3ImageProcessorPil"}
if importlib.util.find_spec("torchvision") is not None:
    BACKENDS["torchvision"] = "Gemma3ImageProcessor"
HAS_TORCH = importlib.util.find_spec("torch") is not None
NAMES = ["rgb_1280x960.jpg", "wide_1000x300.jpg", "tall_400x2000.jpg", "rgba_640x480.png"]
CALLS = [{}, {"do_pan_and_scan": True}, {"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 100,
                                         "pan_and_scan_max_num_crops": 6},
         {"do_pan_and_scan": True, "pan_and_scan_min_ratio_to_activate": 1.01}]
if HAS_TORCH:
    CALLS.append({"do_pan_and_scan": True, "return_tensors": "pt"})


def _processor(backend: str):
    return getattr(transformers, BACKENDS[backend])(
        size={"height": PRESET["height"], "width": PRESET["width"]}, resample=RESAMPLE[PRESET["resample"]],
        image_mean=PRESET["image_mean"], image_std=PRESET["image_std"], **PAS_DEFAULTS,
    )


def _images():
    return [Image.open(io.BytesIO(gemma3_images.make(n))) for n in NAMES]


pytestmark = pytest.mark.usefixtures("mm_hf_stats")


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("call", CALLS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "defaults")
def test_served_calls_equal_the_processor(backend, call):
    ref, acc = _processor(backend), hf.accelerate(_processor(backend), strict=True)
    call = {"return_tensors": "np", **call}
    want, got = ref(images=_images(), **call), acc(images=_images(), **call)
    assert_same_batch(want, got, ["pixel_values", "num_crops"])
    assert hf.stats() == {"served": {BACKENDS[backend]: 1}, "fallbacks": {}}


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_an_option_it_does_not_take_goes_to_the_processor(backend):
    ref, acc = _processor(backend), hf.accelerate(_processor(backend), strict=True)
    call = {"return_tensors": "np", "image_mean": [0.4, 0.4, 0.4]}
    want, got = ref(images=_images(), **call), acc(images=_images(), **call)
    assert all(np.asarray(want[k]).tobytes() == np.asarray(got[k]).tobytes() for k in want)
    assert list(hf.stats()["fallbacks"]) == [f"{BACKENDS[backend]}: option 'image_mean'"]


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_the_processors_do_convert_rgb_over_the_saved_null(backend):
    """gemma-3-4b-it saves ``do_convert_rgb: null``; ``Gemma3Processor`` (and vLLM through it) calls
    the image processor with its own default ``do_convert_rgb=True``, which converts an RGBA or
    palette image. Served, and equal; without the call's True such an image goes to transformers
    (which then refuses the RGBA image)."""
    saved = getattr(transformers, BACKENDS[backend]).from_dict(dict(PREPROCESSOR_CONFIG))
    assert saved.do_convert_rgb is None
    ref, acc = saved, hf.accelerate(getattr(transformers, BACKENDS[backend]).from_dict(dict(PREPROCESSOR_CONFIG)),
                                    strict=True)
    images = _images() + [_images()[3].convert("P")]
    call = {"return_tensors": "np", "do_convert_rgb": True, "do_pan_and_scan": False}
    want, got = ref(images=images, **call), acc(images=images, **call)
    assert_same_batch(want, got)
    assert hf.stats() == {"served": {BACKENDS[backend]: 1}, "fallbacks": {}}
    with pytest.raises((ValueError, RuntimeError)):  # transformers refuses a 4-channel image (either backend)
        acc(images=images, return_tensors="np")
    assert list(hf.stats()["fallbacks"]) == [f"{BACKENDS[backend]}: a RGBA image with do_convert_rgb off"]


@pytest.mark.skipif(not HAS_TORCH, reason="bfloat16 features are torch tensors")
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_bfloat16_cast_gives_the_processor_output_cast(backend):
    # cast="bfloat16" (vLLM, for a bfloat16 model): a float32 call to torch tensors gives
    # pixel_values in bfloat16 (the family's pixels="bf16"), equal to the processor's float32
    # output cast as vLLM casts it; numpy outputs are as without the cast.
    import torch

    ref, acc = _processor(backend), hf.accelerate(_processor(backend), strict=True, cast="bfloat16")
    for call in ({"return_tensors": "pt"}, {"return_tensors": "pt", "do_pan_and_scan": True}):
        want, got = ref(images=_images(), **call), acc(images=_images(), **call)
        assert got.keys() == want.keys() and got["pixel_values"].dtype == torch.bfloat16
        assert torch.equal(got["pixel_values"], want["pixel_values"].to(torch.bfloat16))
        assert torch.equal(got["num_crops"], want["num_crops"])
    assert_same_batch(ref(images=_images(), return_tensors="np"), acc(images=_images(), return_tensors="np"))
    assert hf.stats() == {"served": {BACKENDS[backend]: 3}, "fallbacks": {}}
