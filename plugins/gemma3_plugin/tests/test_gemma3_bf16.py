"""``pixels="bf16"``: Gemma 3's float32 ``pixel_values`` rounded to bfloat16 as
``tensor.to(torch.bfloat16)`` rounds them, written once as their uint16 bits (what vLLM
gives a bfloat16 model after casting the processor's float32 output). Equal to the bits of
the float32 path's values on both backends, with pan-and-scan crops and an empty crop."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.kernels import bf16_bits
from mm_framework.testing import sample_image

IMAGES = [sample_image(1280, 960, "JPEG", 2), sample_image(1000, 300, "PNG", 3), sample_image(5, 1, "PNG", 4)]


def _pixels(spec, **change):
    pipe = mmf.pipeline_from_spec({**spec, **change})
    out = pipe.process(mmf.MmInput(images=IMAGES))
    return out, out.model_kwargs()["pixel_values"]


@pytest.mark.parametrize("backend", ["pil", "torchvision"])
def test_bf16_features_are_the_f32_features_rounded(backend):
    # pan-and-scan with a 1-pixel minimum crop: the 5x1 image has an empty last crop, which
    # the PIL backend fills with the normalized value of 0 (the torchvision one refuses it).
    spec = {**mmf.preset("gemma3_4b_it"), "backend": backend, "do_pan_and_scan": True,
            "pan_and_scan_min_crop_size": 1 if backend == "pil" else 64}
    f32_out, f32 = _pixels(spec)
    bf16_out, bf16 = _pixels(spec, pixels="bf16")
    assert f32.dtype == np.float32 and bf16.dtype == np.uint16
    assert bf16.shape == f32.shape and bf16.tobytes() == bf16_bits(f32).tobytes()
    assert [it.feature.dtype for it in bf16_out.items] == ["bf16"] * len(IMAGES)
    assert [it.geometry for it in bf16_out.items] == [it.geometry for it in f32_out.items]
    assert bf16_out.input_ids.tobytes() == f32_out.input_ids.tobytes()


def test_bf16_is_declared_in_the_capabilities():
    pipe = mmf.pipeline_from_spec({**mmf.preset("gemma3_4b_it"), "pixels": "bf16"})
    assert pipe.capabilities.outputs["image"].feature == "bf16"


@pytest.mark.torch_parity
def test_torch_gets_bfloat16():
    torch = pytest.importorskip("torch")
    spec = mmf.preset("gemma3_4b_it")
    f32 = mmf.pipeline_from_spec(spec).process(mmf.MmInput(images=IMAGES[:1])).model_kwargs(as_torch=True)
    bf16 = mmf.pipeline_from_spec({**spec, "pixels": "bf16"}).process(mmf.MmInput(images=IMAGES[:1]))
    got = bf16.model_kwargs(as_torch=True)["pixel_values"]
    assert got.dtype == torch.bfloat16 and torch.equal(got, f32["pixel_values"].to(torch.bfloat16))
