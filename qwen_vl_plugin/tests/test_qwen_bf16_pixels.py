"""``pixels="bf16"``: the f32 ``pixel_values`` rounded to bfloat16 as ``tensor.to(torch.bfloat16)``
rounds them (to nearest even), written once at half the bytes: what an engine that casts
a processor's float outputs to a bfloat16 model receives (vLLM with
``mm_device_do_normalize`` off). Everything else of the output is the f32 path's."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import par
from mm_framework.kernels import bf16_bits

from .qwen_video_replay import CASES, load, request, spec_for
from .test_qwen_u8_pixels import PRESETS, SIZES, _png

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_AV = importlib.util.find_spec("av") is not None
VIDEO_CASES = [p for p in CASES if "expected" in load(p) and ("-mixed-" in p.stem or "160x120" in p.stem)]


def _pipes(spec: dict) -> tuple[mmf.Pipeline, mmf.Pipeline]:
    return mmf.pipeline_from_spec(spec), mmf.pipeline_from_spec({**spec, "pixels": "bf16"})


def _same_but_rounded(f32: mmf.Output, bf16: mmf.Output) -> None:
    assert np.array_equal(f32.input_ids, bf16.input_ids) and f32.offsets == bf16.offsets
    assert f32.positions == bf16.positions
    for a, b in zip(f32.items, bf16.items, strict=True):
        assert b.feature.dtype == "bf16" and b.feature.array.dtype == np.uint16 and b.feature.shape == a.feature.shape
        assert np.array_equal(b.feature.array, bf16_bits(a.feature.array))
        assert b.aux == a.aux and b.hash == a.hash and b.geometry == a.geometry
    kf, kb = f32.model_kwargs(), bf16.model_kwargs()
    assert kf.keys() == kb.keys()
    for name in kf:
        if name.startswith("pixel_values"):
            assert kb[name].dtype == np.uint16 and np.array_equal(kb[name], bf16_bits(kf[name]))
        else:
            assert kb[name].tobytes() == kf[name].tobytes()


@pytest.mark.parametrize("backend", ["pil", "torchvision"])
@pytest.mark.parametrize("preset", PRESETS)
def test_bf16_patches_are_the_rounded_f32_patches(preset, backend):
    f32, bf16 = _pipes({**mmf.preset(preset), "backend": backend})
    images = [_png(w, h, i) for i, (w, h) in enumerate(SIZES)]
    _same_but_rounded(f32.process(mmf.MmInput(images=images)), bf16.process(mmf.MmInput(images=images)))


@pytest.mark.skipif(not HAS_AV, reason="decoding a clip needs PyAV (mm-framework[video])")
@pytest.mark.parametrize("case", VIDEO_CASES, ids=lambda p: p.stem)
def test_bf16_video_patches_are_the_rounded_f32_patches(case):
    c = load(case)
    f32, bf16 = _pipes(spec_for(c))
    _same_but_rounded(f32.process(request(c)), bf16.process(request(c)))


def test_same_bytes_inline_threaded_cached_and_portable():
    spec = {**mmf.preset("qwen2_5_vl"), "backend": "torchvision", "pixels": "bf16"}
    req = mmf.MmInput(images=[_png(1280, 960, 3), _png(333, 777, 4)])
    outs = []
    for threads in ("inline", 2):
        par.set_threads(threads)
        try:
            outs.append(mmf.pipeline_from_spec(spec).process(req))
        finally:
            par.set_threads(None)
    cached = mmf.pipeline_from_spec(spec, cache=mmf.FeatureCache(1 << 26))
    outs += [cached.process(req), cached.process(req)]
    mmf.kernels.native.set_mode("portable")
    try:
        outs.append(mmf.pipeline_from_spec(spec).process(req))
    finally:
        mmf.kernels.native.set_mode(None)
    for out in outs[1:]:
        assert [it.feature for it in out.items] == [it.feature for it in outs[0].items]


@pytest.mark.torch_parity
@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_torch_cast_of_the_f32_patches_gives_the_bf16_tensor():
    import torch

    f32, bf16 = _pipes(mmf.preset("qwen2_5_vl"))
    req = mmf.MmInput(images=[_png(w, h, i) for i, (w, h) in enumerate(SIZES[:5])])
    want = f32.process(req).model_kwargs(as_torch=True)["pixel_values"].to(torch.bfloat16)
    got = bf16.process(req).model_kwargs(as_torch=True)["pixel_values"]
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


def test_spec_keeps_bf16_and_other_families_refuse_it():
    spec = {**mmf.preset("qwen2_vl"), "pixels": "bf16"}
    assert mmf.pipeline_from_spec(spec).spec["pixels"] == "bf16"
    if "paddleocr_vl" in mmf.list_presets():  # a patch-grid family that writes f32 only
        with pytest.raises(mmf.SpecError, match="pixels"):
            mmf.pipeline_from_spec({**mmf.preset("paddleocr_vl"), "pixels": "bf16"})
