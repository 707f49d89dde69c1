"""The pixel modes besides f32.

``pixels="u8"``: the resized pixels in the final patch layout, for an engine that
normalizes on its device (vLLM asks the processor for them with ``do_rescale=False,
do_normalize=False``). Each feature's ``PixelNorm`` must give back the f32 path's bytes
exactly, in numpy and in torch. The norm tables are strictly increasing per channel (std
is non-zero), so equal normalized bytes also mean equal u8 values: the layout itself is
checked by the same comparison.

``pixels="bf16"``: the f32 ``pixel_values`` rounded to bfloat16 as
``tensor.to(torch.bfloat16)`` rounds them (to nearest even), written once at half the
bytes: what an engine that casts a processor's float outputs to a bfloat16 model
receives (vLLM with ``mm_device_do_normalize`` off).

Everything else of the output is the f32 path's.
"""

from __future__ import annotations

import importlib.util
import io
import pickle

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import par
from mm_framework import plugin as mmp
from mm_framework.kernels import bf16_bits, channel_norm_pil, native, patchify_merged_blocks

from .qwen_video_replay import CASES, load, request, spec_for

SIZES = [(1, 1), (28, 28), (29, 57), (640, 480), (1280, 960), (97, 2000), (3000, 40)]
PRESETS = ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"]
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_AV = importlib.util.find_spec("av") is not None
# Each configuration's image + video requests and one video-only clip.
VIDEO_CASES = [p for p in CASES if "expected" in load(p) and ("-mixed-" in p.stem or "160x120" in p.stem)]


def _png(w: int, h: int, seed: int = 0) -> bytes:
    rgb = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "PNG")
    return buf.getvalue()


def _pipes(spec: dict, pixels: str = "u8") -> tuple[mmf.Pipeline, mmf.Pipeline]:
    return mmf.pipeline_from_spec(spec), mmf.pipeline_from_spec({**spec, "pixels": pixels})


def _same_but_pixels(f32: mmf.Output, u8: mmf.Output) -> None:
    assert np.array_equal(f32.input_ids, u8.input_ids) and f32.offsets == u8.offsets
    assert f32.positions == u8.positions
    for a, b in zip(f32.items, u8.items, strict=True):
        assert b.feature.dtype == "u8" and b.feature.shape == a.feature.shape
        assert b.feature.norm.run == a.feature.shape[1] // 3
        assert b.feature.normalized() == a.feature
        assert b.aux == a.aux and b.hash == a.hash and b.geometry == a.geometry
    kf, ku = f32.model_kwargs(), u8.model_kwargs()
    assert kf.keys() == ku.keys()
    for name in kf:
        if name.startswith("pixel_values"):
            assert ku[name].dtype == np.uint8
            norm = next(it.feature.norm for it in u8.items)
            assert norm.apply(ku[name]).tobytes() == kf[name].tobytes()
        else:
            assert ku[name].tobytes() == kf[name].tobytes()


def _same_but_rounded(f32: mmf.Output, bf16: mmf.Output) -> None:
    assert np.array_equal(f32.input_ids, bf16.input_ids) and f32.offsets == bf16.offsets
    assert f32.positions == bf16.positions
    for a, b in zip(f32.items, bf16.items, strict=True):
        assert b.feature.dtype == "bf16" and b.feature.shape == a.feature.shape
        assert np.array_equal(b.feature.array, bf16_bits(a.feature.array))
        assert b.aux == a.aux and b.hash == a.hash and b.geometry == a.geometry
    kf, kb = f32.model_kwargs(), bf16.model_kwargs()
    assert kf.keys() == kb.keys()
    for name in kf:
        if name.startswith("pixel_values"):
            assert kb[name].dtype == np.uint16 and np.array_equal(kb[name], bf16_bits(kf[name]))
        else:
            assert kb[name].tobytes() == kf[name].tobytes()


# pixel mode -> what its output must be, given the f32 output
SAME_BUT = {"u8": _same_but_pixels, "bf16": _same_but_rounded}


@pytest.mark.parametrize("pixels", list(SAME_BUT))
@pytest.mark.parametrize("backend", ["pil", "torchvision"])
@pytest.mark.parametrize("preset", PRESETS)
def test_patches_are_the_f32_patches_in_another_dtype(preset, backend, pixels):
    f32, other = _pipes({**mmf.preset(preset), "backend": backend}, pixels)
    images = [_png(w, h, i) for i, (w, h) in enumerate(SIZES)]
    SAME_BUT[pixels](f32.process(mmf.MmInput(images=images)), other.process(mmf.MmInput(images=images)))


def test_u8_is_a_quarter_of_the_bytes():
    f32, u8 = _pipes(mmf.preset("qwen2_vl"))
    req = mmf.MmInput(images=[_png(1280, 960)])
    a, b = f32.process(req).items[0].feature.array, u8.process(req).items[0].feature.array
    assert b.nbytes * 4 == a.nbytes


@pytest.mark.skipif(not HAS_AV, reason="decoding a clip needs PyAV (mm-framework[video])")
@pytest.mark.parametrize("pixels", list(SAME_BUT))
@pytest.mark.parametrize("case", VIDEO_CASES, ids=lambda p: p.stem)
def test_video_patches_are_the_f32_patches_in_another_dtype(case, pixels):
    c = load(case)
    f32, other = _pipes(spec_for(c), pixels)
    SAME_BUT[pixels](f32.process(request(c)), other.process(request(c)))


@pytest.mark.torch_parity
@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
@pytest.mark.parametrize("backend", ["pil", "torchvision"])
def test_torch_normalize_gives_the_f32_bytes(backend):
    import torch

    f32, u8 = _pipes({**mmf.preset("qwen2_5_vl"), "backend": backend})
    req = mmf.MmInput(images=[_png(w, h, i) for i, (w, h) in enumerate(SIZES[:5])])
    a, b = f32.process(req).model_kwargs(as_torch=True), u8.process(req)
    patches = b.model_kwargs(as_torch=True)["pixel_values"]
    assert patches.dtype == torch.uint8
    got = b.items[0].feature.norm.apply_torch(patches)
    assert got.dtype == torch.float32 and torch.equal(got, a["pixel_values"])


@pytest.mark.parametrize("pixels", list(SAME_BUT))
def test_same_bytes_inline_threaded_cached_and_portable(pixels):
    spec = {**mmf.preset("qwen2_vl"), "backend": "torchvision", "pixels": pixels}
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
    native.set_mode("portable")
    try:
        outs.append(mmf.pipeline_from_spec(spec).process(req))
    finally:
        native.set_mode(None)
    for out in outs[1:]:
        assert [it.feature for it in out.items] == [it.feature for it in outs[0].items]


@pytest.mark.torch_parity
@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_torch_cast_of_the_f32_patches_gives_the_bf16_tensor():
    import torch

    f32, bf16 = _pipes(mmf.preset("qwen2_5_vl"), "bf16")
    req = mmf.MmInput(images=[_png(w, h, i) for i, (w, h) in enumerate(SIZES[:5])])
    want = f32.process(req).model_kwargs(as_torch=True)["pixel_values"].to(torch.bfloat16)
    got = bf16.process(req).model_kwargs(as_torch=True)["pixel_values"]
    assert got.dtype == torch.bfloat16 and torch.equal(got, want)


def test_spec_keeps_bf16_and_an_f32_only_family_refuses_it():
    assert mmf.pipeline_from_spec({**mmf.preset("qwen2_vl"), "pixels": "bf16"}).spec["pixels"] == "bf16"
    if "paddleocr_vl" in mmf.list_presets():  # a patch-grid family that writes f32 only
        with pytest.raises(mmf.SpecError, match="pixels"):
            mmf.pipeline_from_spec({**mmf.preset("paddleocr_vl"), "pixels": "bf16"})


def test_tensor_with_norm_pickles_and_compares_its_norm():
    out = mmf.pipeline_from_spec({**mmf.preset("qwen2_vl"), "pixels": "u8"}).process(
        mmf.MmInput(images=[_png(56, 84)]))
    t = out.items[0].feature
    back = pickle.loads(pickle.dumps(t))
    assert back == t and back.norm == t.norm and not back.array.flags.writeable
    other = mmp.Tensor.u8(t.array, mmp.PixelNorm(np.zeros((3, 256), np.float32), t.norm.run))
    assert other != t


@pytest.mark.parametrize("frames", [1, 2])
def test_kernel_u8_layout_is_the_f32_layout(frames):
    rng = np.random.default_rng(frames)
    rgb = rng.integers(0, 256, (2, 56, 84, 3), dtype=np.uint8)
    src = rgb[0] if frames == 1 else rgb
    norm = channel_norm_pil([0.5, 0.4, 0.3], [0.2, 0.25, 0.3])
    raw = patchify_merged_blocks(src, 14, 2, 2, None)
    assert raw.dtype == np.uint8
    want = patchify_merged_blocks(src, 14, 2, 2, norm)
    assert mmp.PixelNorm(norm.lut, 2 * 14 * 14).apply(raw).tobytes() == want.tobytes()
    with pytest.raises(mmp.InternalError, match="out must be a C-contiguous uint8 array"):
        patchify_merged_blocks(src, 14, 2, 2, None, out=np.empty(want.shape, np.float32))


def test_spec_refuses_other_dtypes():
    with pytest.raises(mmf.SpecError, match="pixels"):
        mmf.pipeline_from_spec({**mmf.preset("qwen2_vl"), "pixels": "f16"})
    assert "pixels" not in mmf.pipeline_from_spec(mmf.preset("qwen2_vl")).spec
    assert mmf.pipeline_from_spec({**mmf.preset("qwen2_vl"), "pixels": "u8"}).spec["pixels"] == "u8"


@pytest.mark.parametrize("build, message", [
    (lambda: mmp.PixelNorm(np.zeros((3, 255), np.float32), 4), r"float32 \[3, 256\]"),
    (lambda: mmp.PixelNorm(np.zeros((3, 256), np.float64), 4), r"float32 \[3, 256\]"),
    (lambda: mmp.PixelNorm(np.zeros((3, 256), np.float32), 0), "run"),
    (lambda: mmp.Tensor.u8(np.zeros((2, 10), np.uint8), mmp.PixelNorm(np.zeros((3, 256), np.float32), 4)),
     r"needs \[rows, 3k\*4\]"),
    (lambda: mmp.Tensor(np.zeros((2, 12), np.float32), "f32", mmp.PixelNorm(np.zeros((3, 256), np.float32), 4)),
     "only a u8 tensor"),
    (lambda: mmp.Tensor.u8(np.zeros((2, 12), np.uint8)).normalized(), "no normalized form"),
])
def test_pixel_norm_is_checked(build, message):
    with pytest.raises(mmp.InternalError, match=message):
        build()


@pytest.mark.torch_parity
@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_torch_normalize_refuses_other_tensors():
    import torch

    norm = mmp.PixelNorm(np.zeros((3, 256), np.float32), 4)
    with pytest.raises(mmf.UnsupportedError, match="2-D uint8 tensor"):
        norm.apply_torch(torch.zeros((2, 12), dtype=torch.float32))


def test_datasets_refuse_u8_patches():
    pytest.importorskip("pyarrow", reason="datasets need the batch extra")
    import json

    from mm_framework.arrow.schema import family_shape

    with pytest.raises(mmf.SpecError, match="u8 patches"):
        family_shape(json.dumps({**mmf.preset("qwen2_vl"), "pixels": "u8"}))
