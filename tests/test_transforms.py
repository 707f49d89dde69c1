"""Transform primitives: sizing pins (HF smart_resize, scaled_dims), LUTs, patch layouts."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from mm_framework.errors import InternalError, MediaError, SpecError
from mm_framework.resize import resize_rgb
from mm_framework.transforms import (
    apply_lut,
    extract_patches,
    normalize_lut_fused,
    normalize_lut_pil,
    normalize_lut_recip,
    normalize_rgb_f32,
    pad_to_grid,
    patch_grid,
    patchify_merged_blocks,
    scaled_dims,
    smart_resize,
)

GOLDEN = Path(__file__).parent / "golden"
_spec = importlib.util.spec_from_file_location("generate_resize", GOLDEN / "generate_resize.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def _fixture(name: str) -> dict:
    return json.loads((GOLDEN / "resize" / name).read_text())


CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

# core-contracts §11.5 / families.md §2.3 pins; both formulas agree on these.
SMART_RESIZE_PINS = [
    ((1365, 2048, 28, 3136, 12845056), (1372, 2044)),
    ((100, 100, 28, 3136, 1003520), (112, 112)),
    ((100, 100, 28, 3136, 12845056), (112, 112)),
    ((3000, 4000, 28, 3136, 1003520), (840, 1148)),
    ((20, 20, 28, 3136, 12845056), (56, 56)),
    ((1365, 2048, 32, 65536, 16777216), (1376, 2048)),
    ((4000, 48, 32, 4, 2**30), (4000, 64)),  # tie 48/32 = 1.5 rounds to 2
    # hf-reference §3.2 examples (factor 28, class defaults)
    ((10, 10, 28, 3136, 1003520), (56, 56)),
    ((70, 98, 28, 3136, 1003520), (56, 112)),  # 70/28 = 2.5 -> 2, 98/28 = 3.5 -> 4
    ((3000, 20, 28, 3136, 1003520), (2996, 28)),
    ((960, 1280, 28, 3136, 1003520), (840, 1148)),
    ((1080, 1920, 28, 3136, 1003520), (728, 1316)),
    # hf-reference §3.6 cells
    ((3000, 4000, 28, 3136, 12845056), (2996, 4004)),
    ((3000, 4000, 32, 65536, 16777216), (3008, 4000)),
    ((480, 640, 28, 3136, 1003520), (476, 644)),
    ((960, 1280, 32, 65536, 16777216), (960, 1280)),
    ((1080, 1920, 28, 3136, 12845056), (1092, 1932)),
    ((10, 10, 32, 65536, 16777216), (256, 256)),
    ((501, 333, 28, 3136, 1003520), (504, 336)),
    ((100, 200, 32, 65536, 16777216), (192, 384)),
]

# families.md §2.3 divergence table: the project follows current HF (transformers 5.24),
# not the sglang crate. Crate values in comments.
HF_DIVERGENCE_PINS = [
    ((10, 1000, 28, 3136, 12845056), (28, 560)),  # crate: (28, 1008)
    ((14, 2000, 28, 3136, 12845056), (28, 672)),  # crate: (28, 1988)
    ((10, 2000, 28, 3136, 3136), (28, 812)),  # crate: error (degenerate)
]


@pytest.mark.parametrize(("args", "want"), SMART_RESIZE_PINS + HF_DIVERGENCE_PINS)
def test_smart_resize_pins(args, want):
    assert smart_resize(*args) == want


def test_smart_resize_aspect_ratio():
    assert smart_resize(10, 2000, 28, 3136, 12845056)  # ratio exactly 200 passes
    with pytest.raises(MediaError, match=r"absolute aspect ratio must be smaller than 200, got 1000\.0"):
        smart_resize(10000, 10, 28, 3136, 12845056)
    with pytest.raises(MediaError, match=r"got 300\.0"):
        smart_resize(10, 3000, 28, 3136, 1003520)


@pytest.mark.parametrize("hw", [(0, 10), (10, 0), (0, 0)])
def test_smart_resize_empty(hw):
    with pytest.raises(MediaError, match="empty image"):
        smart_resize(*hw, 28, 3136, 1003520)


def test_smart_resize_zero_side_rejected():
    # Only min_pixels == 0 lets round() leave a 0 side (10/28 rounds to 0).
    with pytest.raises(MediaError, match="smart_resize: 10x1000 degenerates to 0x1008"):
        smart_resize(10, 1000, 28, 0, 12845056)


@pytest.mark.parametrize("bad", [(0, 3136, 1003520), (28, 3136, 0), (28, -1, 1003520)])
def test_smart_resize_bad_params(bad):
    f, lo, hi = bad
    with pytest.raises(SpecError, match="smart_resize"):
        smart_resize(100, 100, f, lo, hi)


SCALED_DIMS_PINS = [
    ((80, 60, None, None), (80, 60)),
    ((80, 60, 0.5, None), (40, 30)),
    ((3, 1, 0.1, None), (1, 1)),
    ((0, 0, 0.5, None), (0, 0)),
    ((80, 60, 2.0, None), (160, 120)),
    ((80, 60, 2.0, 120), (120, 90)),
    ((80, 60, 0.9, 40), (72, 54)),
    # families.md §3.2 (frac 2.0, cap 2048)
    ((1920, 1080, 2.0, 2048), (2048, 1152)),
    ((640, 480, 2.0, 2048), (1280, 960)),
    ((4000, 3000, 2.0, 2048), (4000, 3000)),
    ((1024, 1024, 2.0, 2048), (2048, 2048)),
    ((2048, 100, 2.0, 2048), (2048, 100)),
    ((50, 34, 2.0, 2048), (100, 68)),
    # half rounds up (Python round would give 2 for 2.5): 5*0.5 = 2.5 -> 3
    ((5, 4, 0.5, None), (3, 2)),
]


@pytest.mark.parametrize(("args", "want"), SCALED_DIMS_PINS)
def test_scaled_dims_pins(args, want):
    assert scaled_dims(*args) == want


def test_smart_resize_matches_transformers_sweep():
    """transformers 5.24 ``smart_resize`` over ~600 sizes x 7 budgets (fixture from the real function)."""
    doc = _fixture("smart_resize.json")
    assert doc["versions"]["transformers"] == "5.24.0"
    rows = doc["rows"]
    assert len(rows) > 4000
    for h, w, f, lo, hi, *want in rows:
        if isinstance(want[0], str):  # HF raised: only the aspect-ratio check can
            with pytest.raises(MediaError) as err:
                smart_resize(h, w, f, lo, hi)
            assert str(err.value) == want[0]
        elif 0 in want:  # HF returns a zero side (min_pixels=0); we refuse it
            with pytest.raises(MediaError, match="smart_resize: .* degenerates"):
                smart_resize(h, w, f, lo, hi)
        else:
            assert smart_resize(h, w, f, lo, hi) == tuple(want), (h, w, f, lo, hi)


# ---------------------------------------------------------------------------
# Normalize tables
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["clip", "half"])
def test_normalize_luts_match_transformers(name):
    """Both tables equal what transformers' own rescale/normalize ops produce, bit for bit."""
    ref = _fixture("normalize_luts.json")[name]
    pil = np.frombuffer(bytes.fromhex(ref["pil"]), np.float32).reshape(3, 256)
    fused = np.frombuffer(bytes.fromhex(ref["fused"]), np.float32).reshape(3, 256)
    assert normalize_lut_pil(ref["mean"], ref["std"]).tobytes() == pil.tobytes()
    assert normalize_lut_fused(ref["mean"], ref["std"]).tobytes() == fused.tobytes()
    assert not np.array_equal(pil, fused)  # the two roundings really are different


def test_normalize_lut_differs_per_resampler():
    pil = normalize_lut_pil((0.5,) * 3, (0.5,) * 3)
    fused = normalize_lut_fused((0.5,) * 3, (0.5,) * 3)
    assert np.count_nonzero(pil[0] != fused[0]) == 128
    for lut in (pil, fused):
        assert (lut[:, 0] == -1.0).all() and (lut[:, 255] == 1.0).all()
    assert np.abs(pil - fused).max() < 3e-7


def test_normalize_lut_recip_multiplies_by_the_f32_reciprocal():
    lut = normalize_lut_recip(CLIP_MEAN, CLIP_STD)
    v = np.arange(256, dtype=np.float32)
    for c in range(3):
        want = (v * np.float32(1 / 255) - np.float32(CLIP_MEAN[c])) / np.float32(CLIP_STD[c])
        assert lut[c].tobytes() == want.astype(np.float32).tobytes()


def test_normalize_rgb_f32():
    rgb = gen.source_image(5, 7, 1)
    out = normalize_rgb_f32(rgb, CLIP_MEAN, CLIP_STD)
    lut = normalize_lut_recip(CLIP_MEAN, CLIP_STD)
    assert out.shape == (5, 7, 3) and out.dtype == np.float32
    assert out[3, 4, 2] == lut[2][rgb[3, 4, 2]] and out[0, 0, 0] == lut[0][rgb[0, 0, 0]]
    buf = np.empty((5, 7, 3), np.float32)
    assert apply_lut(rgb, lut, out=buf) is buf and np.array_equal(buf, out)


@pytest.mark.parametrize(
    ("mean", "std"),
    [((0.5, 0.5), (0.5, 0.5, 0.5)), ((0.5,) * 3, (0.5, 0.0, 0.5)), ((float("nan"), 0, 0), (1, 1, 1))],
)
@pytest.mark.parametrize("builder", [normalize_lut_pil, normalize_lut_fused, normalize_lut_recip])
def test_normalize_lut_rejects_bad_params(builder, mean, std):
    with pytest.raises(SpecError, match="mean and std"):
        builder(mean, std)


# ---------------------------------------------------------------------------
# Patch layouts
# ---------------------------------------------------------------------------

IDENTITY = np.tile(np.arange(256, dtype=np.float32), (3, 1))  # v -> float(v): positions readable


def _hf_order(rgb, ps, m, tps, lut):
    """transformers' numpy patchify (hf-reference §3.5), the reference for the layout."""
    img = np.stack([lut[c][rgb[:, :, c]] for c in range(3)])
    c, h, w = img.shape
    gh, gw = h // ps, w // ps
    p = img.reshape(c, gh // m, m, ps, gw // m, m, ps).transpose(1, 4, 2, 5, 0, 3, 6)
    p = np.broadcast_to(p[:, :, :, :, :, None], p.shape[:5] + (tps, ps, ps))
    return p.reshape(gh * gw, c * tps * ps * ps)


def test_patchify_layout_matches_hf_order():
    """core-contracts §11.7 pins."""
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
    assert np.array_equal(patchify_merged_blocks(rgb, ps, m, tps, lut), _hf_order(rgb, ps, m, tps, lut))


@pytest.mark.parametrize("threads", ["inline", 2])
def test_patchify_fused_matches_unfused_bitwise(threads):
    """Block-row fan-out, preallocated ``out`` and a non-contiguous source change nothing."""
    from mm_framework import par

    big = gen.source_image(600, 1000, 5)
    rgb = big[:576, 48:944]  # 576 x 896, not C-contiguous
    lut = normalize_lut_fused((0.5,) * 3, (0.5,) * 3)
    want = _hf_order(np.ascontiguousarray(rgb), 16, 2, 2, lut)
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
    with pytest.raises(MediaError, match="HWC uint8 RGB"):
        patchify_merged_blocks(rgb[:, :, :2], 14, 2, 2, IDENTITY)


@pytest.mark.parametrize("case", _fixture("hf_pixel_values.json")["cases"],
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


def test_patch_grid():
    assert patch_grid(10, 10, 4, 4) == (3, 3)
    assert patch_grid(8, 12, 4, 4) == (2, 3)
    assert patch_grid(0, 5, 2, 2) == (0, 3)
    with pytest.raises(SpecError, match="patch size"):
        patch_grid(4, 4, 0, 2)


def test_pad_to_grid():
    data = np.arange(3 * 5 * 2, dtype=np.float32).reshape(3, 5, 2)
    buf, nh, nw = pad_to_grid(data, 2, 4, [-1.0, -2.0])
    assert (nh, nw) == (4, 8) and buf.shape == (4, 8, 2)
    assert np.array_equal(buf[:3, :5], data)
    assert (buf[3, :, 0] == -1).all() and (buf[:, 5:, 1] == -2).all()
    same, h, w = pad_to_grid(data, 3, 5, [0.0, 0.0])
    assert same is data and (h, w) == (3, 5)
    with pytest.raises(InternalError, match="pad_value"):
        pad_to_grid(data, 2, 2, [0.0])


def test_extract_patches():
    data = np.arange(4 * 6 * 3, dtype=np.float32).reshape(4, 6, 3)
    p = extract_patches(data, 2, 3)
    assert p.shape == (4, 2, 3, 3)
    assert np.array_equal(p[1], data[0:2, 3:6])  # patch i*npw + j, row-major
    assert np.array_equal(p[2], data[2:4, 0:3])
    with pytest.raises(InternalError, match="not a multiple"):
        extract_patches(data, 3, 3)
