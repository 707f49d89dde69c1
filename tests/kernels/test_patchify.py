"""Patch layouts: the Qwen merge-window order against transformers' own reshape, any band
split and thread count, strided sources, and the end-to-end pixel values of the real processor."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from .kernel_refs import BUILDERS, CLIP_MEAN, CLIP_STD, HALF, every_value_image, fixture, gen, hf_order
from mm_framework import par
from mm_framework.kernels import native
from mm_framework.kernels import patchify as patchify_module
from mm_framework.errors import InternalError, MediaError
from mm_framework.kernels import (
    channel_norm_fused,
    channel_norm_pil,
    normalize_lut_fused,
    normalize_lut_pil,
    patchify_merged_blocks,
    resize_rgb,
    smart_resize,
)

IDENTITY = np.tile(np.arange(256, dtype=np.float32), (3, 1))  # v -> float(v): positions readable


def test_patchify_layout_matcheshf_order():
    """Pinned positions of the layout (docs/architecture.md, "Patch layouts")."""
    y, x, c = np.mgrid[0:4, 0:8, 0:3]
    rgb = (y * 16 + x * 2 + c).astype(np.uint8)
    pv = patchify_merged_blocks(rgb, 2, 2, 2, IDENTITY).reshape(-1)
    assert len(pv) == 8 * 24
    assert pv[24] == rgb[0, 2, 0]  # row 1, col 0
    assert pv[48] == rgb[2, 0, 0]  # row 2
    assert pv[96] == rgb[0, 4, 0]  # row 4
    assert pv[24 + 4] == pv[24]  # t = 1 duplicates t = 0
    assert pv[8] == rgb[0, 0, 1]  # channel stride 8
    assert pv[0] == 0 and pv[1] == rgb[0, 1, 0] and pv[2] == rgb[1, 0, 0]


@pytest.mark.parametrize(("h", "w", "ps", "m", "tps"), [(56, 84, 14, 2, 2), (64, 32, 16, 2, 2), (12, 18, 3, 2, 3),
                                                         (8, 8, 2, 1, 1), (36, 24, 4, 3, 2)])
def test_patchify_equals_hf_reshape(h, w, ps, m, tps):
    rgb = gen.source_image(h, w, h + w)
    lut = normalize_lut_pil(CLIP_MEAN, CLIP_STD)
    assert np.array_equal(patchify_merged_blocks(rgb, ps, m, tps, lut), hf_order(rgb, ps, m, tps, lut))


@pytest.mark.parametrize("threads", ["inline", 2])
def test_patchify_fused_matches_unfused_bitwise(threads):
    """Block-row fan-out, preallocated ``out`` and a non-contiguous source change nothing."""
    from mm_framework import par

    big = gen.source_image(600, 1000, 5)
    rgb = big[:576, 48:944]  # 576 x 896, not C-contiguous
    lut = normalize_lut_fused((0.5,) * 3, (0.5,) * 3)
    want = hf_order(np.ascontiguousarray(rgb), 16, 2, 2, lut)
    par.set_threads(threads)
    try:
        out = np.full(want.shape, np.nan, np.float32)
        assert patchify_merged_blocks(rgb, 16, 2, 2, lut, out=out) is out
    finally:
        par.set_threads(None)
    assert np.array_equal(out, want)


@pytest.mark.parametrize(("h", "w", "ps", "m"), [(30, 56, 14, 2), (56, 30, 14, 2), (28, 28, 0, 2), (28, 28, 14, 0)])
def test_patchify_rejects_bad_geometry(h, w, ps, m):
    with pytest.raises(InternalError, match="patchify"):
        patchify_merged_blocks(np.zeros((h, w, 3), np.uint8), ps, m, 2, IDENTITY)


def test_patchify_rejects_bad_out_and_lut():
    rgb = np.zeros((28, 28, 3), np.uint8)
    with pytest.raises(InternalError, match="out must be"):
        patchify_merged_blocks(rgb, 14, 2, 2, IDENTITY, out=np.empty((4, 100), np.float32))
    with pytest.raises(InternalError, match="out must be"):
        patchify_merged_blocks(rgb, 14, 2, 2, IDENTITY, out=np.empty((4, 1176), np.float64))
    with pytest.raises(InternalError, match="normalize table"):
        patchify_merged_blocks(rgb, 14, 2, 2, IDENTITY.astype(np.float64))
    with pytest.raises(MediaError, match="3 channels"):
        patchify_merged_blocks(rgb[:, :, :2], 14, 2, 2, IDENTITY)


@pytest.mark.parametrize("case", fixture("hf_pixel_values.json")["cases"],
                         ids=lambda c: f"{c['config']}-{c['backend']}-{c['h']}x{c['w']}")
def test_pixel_values_match_transformers_processor(case):
    """smart_resize -> resize -> LUT -> patchify equals the real HF processor's ``pixel_values``.

    backend ``pil`` (``Qwen2VLImageProcessorPil``): Pillow bicubic + the PIL table;
    backend ``torchvision`` (``Qwen2VLImageProcessor``): ATen u8 bicubic + the fused table.
    """
    ps, m, tps = case["patch_size"], case["merge_size"], case["temporal_patch_size"]
    src = gen.source_image(case["h"], case["w"], case["seed"], case["pattern"])
    th, tw = smart_resize(case["h"], case["w"], ps * m, case["min_pixels"], case["max_pixels"])
    assert [1, th // ps, tw // ps] == case["grid_thw"]
    pil = case["backend"] == "pil"
    resized = resize_rgb(src, tw, th, "pil_bicubic" if pil else "aten_u8")
    lut = (normalize_lut_pil if pil else normalize_lut_fused)(case["mean"], case["std"])
    pv = patchify_merged_blocks(resized, ps, m, tps, lut)
    assert list(pv.shape) == case["shape"]
    assert hashlib.sha256(pv.tobytes()).hexdigest() == case["sha256"]


GEOMETRIES = [
    (56, 84, 14, 2, 2), (64, 32, 16, 2, 2), (36, 24, 4, 3, 2), (12, 18, 3, 2, 3), (8, 8, 2, 1, 1), (28, 56, 14, 1, 2),
]


@pytest.mark.parametrize(("h", "w", "ps", "m", "tps"), GEOMETRIES)
@pytest.mark.parametrize(("norm_builder", "_"), BUILDERS)
def test_patchify_program_gather_and_reference_agree_on_every_value(norm_builder, _, h, w, ps, m, tps):
    norm = norm_builder(CLIP_MEAN, CLIP_STD)
    if h * w >= 256:
        rgb = every_value_image(h, w, h * w)
    else:
        rgb = np.random.default_rng(h).integers(0, 256, (h, w, 3), dtype=np.uint8)
    want = hf_order(rgb, ps, m, tps, norm.lut)
    assert norm.steps is not None
    assert np.array_equal(patchify_merged_blocks(rgb, ps, m, tps, norm), want)
    assert np.array_equal(patchify_merged_blocks(rgb, ps, m, tps, norm.lut), want)


@pytest.mark.parametrize("threads", ["inline", 2, 3])
@pytest.mark.parametrize("band_pixels", [1, 1000, 1 << 17])
def test_patchify_any_band_split_and_thread_count(monkeypatch, threads, band_pixels):
    """Bands of one merge-window row, ragged bands and whole-image bands, on any pool."""
    monkeypatch.setattr(patchify_module, "_BAND_PIXELS", band_pixels)
    monkeypatch.setattr(par, "_PAR_MIN_PIXELS", 0)
    big = every_value_image(600, 1000, 5)
    rgb = big[7:567, 48:944]  # 560 x 896, not C-contiguous
    norm = channel_norm_pil(CLIP_MEAN, CLIP_STD)
    want = hf_order(np.ascontiguousarray(rgb), 14, 2, 2, norm.lut)
    par.set_threads(threads)
    try:
        for source in (rgb, np.ascontiguousarray(rgb)):
            out = np.full(want.shape, np.nan, np.float32)
            assert patchify_merged_blocks(source, 14, 2, 2, norm, out=out) is out
            assert np.array_equal(out, want)
    finally:
        par.set_threads(None)


def test_patchify_reads_pixel_strided_views():
    """A view with a pixel stride other than 3 bytes (every other column) takes the copy path."""
    big = every_value_image(56, 112, 3)
    rgb = big[:, ::2]
    norm = channel_norm_fused(HALF, HALF)
    want = hf_order(np.ascontiguousarray(rgb), 14, 2, 2, norm.lut)
    assert np.array_equal(patchify_merged_blocks(rgb, 14, 2, 2, norm), want)


def hf_video_order(frames, ps, m, lut):
    """transformers' Qwen-VL video patchify of one temporal patch (``frames`` ``[tps, h, w, 3]``):
    ``view(tps, C, gh/m, m, ps, gw/m, m, ps).permute(2, 5, 3, 6, 1, 0, 4, 7)``."""
    img = np.stack([np.stack([lut[c][f[:, :, c]] for c in range(3)]) for f in frames])
    tps, c, h, w = img.shape
    p = img.reshape(tps, c, h // ps // m, m, ps, w // ps // m, m, ps).transpose(2, 5, 3, 6, 1, 0, 4, 7)
    return p.reshape(-1, c * tps * ps * ps)


KERNEL_MODES = ["portable"] + (["native"] if native.built() else [])


@pytest.mark.parametrize("mode", KERNEL_MODES)
@pytest.mark.parametrize(("h", "w", "ps", "m", "tps"), [g for g in GEOMETRIES if g[4] > 1])
def test_patchify_frame_stack_equals_hf_video_reshape(mode, h, w, ps, m, tps):
    """A ``[tps, h, w, 3]`` stack puts frame t in temporal slot t, in both kernel modes,
    also from a strided view of a larger clip."""
    rng = np.random.default_rng(h * w + tps)
    clip = rng.integers(0, 256, (tps + 1, h + 5, w + 7, 3), dtype=np.uint8)
    norm = channel_norm_fused(CLIP_MEAN, CLIP_STD)
    native.set_mode(mode)
    try:
        for frames in (np.ascontiguousarray(clip[:tps, :h, :w]), clip[1:, 3 : 3 + h, 2 : 2 + w]):
            want = hf_video_order(np.ascontiguousarray(frames), ps, m, norm.lut)
            got = patchify_merged_blocks(frames, ps, m, tps, norm)
            assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    finally:
        native.set_mode(None)


@pytest.mark.parametrize("threads", ["inline", 2])
def test_patchify_frame_stack_any_band_split_and_thread_count(monkeypatch, threads):
    monkeypatch.setattr(patchify_module, "_BAND_PIXELS", 1000)
    monkeypatch.setattr(par, "_PAR_MIN_PIXELS", 0)
    frames = np.stack([every_value_image(112, 84, s) for s in (1, 2)])
    norm = channel_norm_pil(CLIP_MEAN, CLIP_STD)
    want = hf_video_order(frames, 14, 2, norm.lut)
    par.set_threads(threads)
    native.set_mode("portable")
    try:
        out = np.full(want.shape, np.nan, np.float32)
        assert patchify_merged_blocks(frames, 14, 2, 2, norm, out=out) is out
    finally:
        native.set_mode(None)
        par.set_threads(None)
    assert np.array_equal(out, want)


@pytest.mark.parametrize("mode", KERNEL_MODES)
def test_patchify_frame_stack_needs_tps_frames(mode):
    native.set_mode(mode)
    try:
        with pytest.raises(InternalError, match="3 frames for a temporal patch of 2"):
            patchify_merged_blocks(np.zeros((3, 28, 28, 3), np.uint8), 14, 2, 2, IDENTITY)
    finally:
        native.set_mode(None)
