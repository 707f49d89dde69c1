"""Torch hand-off: zero-copy tensors, bf16 bits as torch.bfloat16, a clear error without torch."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp

from .conftest import png_bytes


def test_without_torch_the_error_names_the_package(monkeypatch, toy_pipe):
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of torch now fails
    out = toy_pipe.process(mmf.MmInput(images=[png_bytes(8, 8)], input_ids=[1]))
    with pytest.raises(mmf.UnsupportedError, match="needs the 'torch' package"):
        out.items[0].feature.to_torch()
    with pytest.raises(mmf.UnsupportedError, match="needs the 'torch' package"):
        out.model_kwargs(as_torch=True)


@pytest.mark.torch_parity
def test_tensors_share_memory_and_bf16_is_viewed():
    torch = pytest.importorskip("torch")
    f32 = mmp.Tensor.f32(np.arange(6, dtype=np.float32).reshape(2, 3))
    t = f32.to_torch()
    assert t.dtype == torch.float32 and t.data_ptr() == f32.array.ctypes.data and t.is_contiguous()
    bits = mmp.Tensor.bf16(np.array([0x3F80, 0xBFE7], dtype=np.uint16))
    b = bits.to_torch()
    assert b.dtype == torch.bfloat16 and b.data_ptr() == bits.array.ctypes.data
    assert b.float().tolist() == [1.0, float(torch.tensor(-1.8046875))]


@pytest.mark.torch_parity
@pytest.mark.parametrize("preset", ["qwen2_vl", "inkling"])
def test_model_kwargs_as_torch_without_copies(preset):
    torch = pytest.importorskip("torch")
    spec = mmf.preset(preset) if preset in mmf.list_presets() else {"family": preset}
    pipe = mmf.pipeline_from_spec(spec)
    ph = spec.get("image_token_id", -101)
    out = pipe.process(mmf.MmInput(images=[png_bytes(64, 48)], input_ids=[3, ph, 4]))
    plain = out.model_kwargs()
    tensors = out.model_kwargs(as_torch=True)
    for name, arr in plain.items():
        assert tensors[name].shape == arr.shape
        if arr.dtype == np.uint16:
            assert tensors[name].dtype == torch.bfloat16
            assert np.array_equal(tensors[name].view(torch.int16).numpy().view(np.uint16), arr)
        else:
            assert np.array_equal(tensors[name].numpy(), arr)
    # One item: the family hands over the item's own features, and torch shares them.
    feature = out.items[0].feature.array
    first = next(iter(tensors.values()))
    assert first.data_ptr() == feature.ctypes.data
