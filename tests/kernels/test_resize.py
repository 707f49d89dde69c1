"""Resizers: API contract, rejections, and byte fixtures from Pillow 13 and torchvision.

The fixtures (``tests/golden/resize/resize.json``) were produced by
``tests/golden/generate_resize.py`` with the real libraries; replaying them needs
neither torch nor torchvision.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import time
from pathlib import Path

import numpy as np
import pytest

from mm_framework.errors import MediaError, SpecError
from mm_framework.kernels import RESAMPLERS, aten_coeffs, resize_rgb
from mm_framework.testing import load_module

GOLDEN = Path(__file__).parent / "golden"
gen = load_module(GOLDEN / "generate_resize.py", "generate_resize")

FIXTURES = json.loads((GOLDEN / "resize" / "resize.json").read_text())
CASES = FIXTURES["cases"]


@functools.lru_cache(maxsize=2)
def _source(h: int, w: int, seed: int, pattern: str) -> np.ndarray:
    src = gen.source_image(h, w, seed, pattern)
    src.flags.writeable = False
    return src


def _by_name(name: str, resample: str) -> dict:
    return next(c for c in CASES if c["name"] == name and c["resample"] == resample)


def test_fixture_provenance():
    v = FIXTURES["versions"]
    assert v["pillow"].startswith("13."), "Pillow 13 changed the bicubic pass order; fixtures must come from it"
    assert v["torchvision"].startswith("0.29.") and v["torch"].startswith("2.14.")
    assert len(CASES) == 61 * len(RESAMPLERS)
    assert {c["resample"] for c in CASES} == set(RESAMPLERS)
    assert sum(c["name"].startswith("random_") for c in CASES) == 40 * len(RESAMPLERS)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['name']}-{c['resample']}" for c in CASES])
def test_matches_reference_bytes(case):
    src = _source(case["h"], case["w"], case["seed"], case["pattern"])
    out = resize_rgb(src, case["out_w"], case["out_h"], case["resample"])
    assert out.shape == (case["out_h"], case["out_w"], 3) and out.dtype == np.uint8
    if "bytes" in case:
        want = np.frombuffer(bytes.fromhex(case["bytes"]), np.uint8).reshape(out.shape)
        assert out.tolist() == want.tolist()
    assert hashlib.sha256(out.tobytes()).hexdigest() == case["sha256"]


def test_pil_bicubic_and_aten_round_differently():
    """Same geometry, kernel and pass order (horizontal first here), different fixed point.

    256x256 -> 100x100 shrinks both axes equally, so Pillow 13 also goes horizontal
    first; the outputs then differ only in rare bytes, by one or two levels.
    """
    src = _source(256, 256, 7, "smooth")
    pil = resize_rgb(src, 100, 100, "pil_bicubic").astype(int)
    aten = resize_rgb(src, 100, 100, "aten_u8").astype(int)
    diff = np.abs(pil - aten)
    assert 0 < np.count_nonzero(diff) < diff.size // 100 and diff.max() <= 2


def test_pillow13_pass_order_matters():
    """480x640 -> 476x644 runs vertical-first in Pillow 13; ATen is always horizontal-first.

    So the two disagree by far more than a rounding step (docs/families/qwen_vl.md).
    """
    src = _source(480, 640, 13, "smooth")
    pil = resize_rgb(src, 644, 476, "pil_bicubic").astype(int)
    aten = resize_rgb(src, 644, 476, "aten_u8").astype(int)
    assert np.abs(pil - aten).max() >= 2


def test_extreme_downscale_reaches_atens_top_precision():
    # 1024 -> 4: every weight is tiny, so ATen's precision search runs to its cap of 22.
    assert aten_coeffs(1024, 4)[2] == 22
    assert bytes.fromhex(_by_name("extreme_1x1024_1x4", "aten_u8")["bytes"])  # pinned by the replay test


@pytest.mark.parametrize(("n_in", "n_out", "want"), [(8, 5, 15), (5, 8, 14), (1, 2, 14), (2, 1, 15)])
def test_aten_precision_per_axis(n_in, n_out, want):
    # P is the largest value with round(wmax * 2^P) < 2^15, so it tracks the largest weight.
    index, weight, p = aten_coeffs(n_in, n_out)
    assert p == want
    assert int(weight.max()) < 1 << 15 <= int(np.float64(weight.max()) * 2 + 1)
    assert (index >= 0).all() and (index < n_in).all()


def test_aten_bilinear_is_the_triangle_filter():
    # A 2x upscale puts every output centre a quarter pixel from its two nearest sources,
    # so the triangle gives 3/4 and 1/4 (edges: the one live neighbour renormalised to 1).
    index, weight, p = aten_coeffs(4, 8, "bilinear")
    assert p == 14 and weight.shape[1] == 3  # support 1: ceil(1) * 2 + 1 taps
    quarter = 1 << (p - 2)
    assert weight[0].tolist() == [4 * quarter, 0, 0] and index[0, 0] == 0
    assert weight[1].tolist() == [3 * quarter, quarter, 0] and index[1, 0] == 0
    assert weight[2].tolist() == [quarter, 3 * quarter, 0] and index[2, 0] == 0
    # Downscaling by 4 widens the support to 4 source pixels each side of the centre.
    assert aten_coeffs(40, 10, "bilinear")[1].shape[1] == 4 * 2 + 1


def test_aten_weights_sum_to_one_in_fixed_point():
    _, weight, p = aten_coeffs(1280, 1148)
    sums = weight.sum(axis=1)
    assert np.abs(sums - (1 << p)).max() <= weight.shape[1]  # per-tap rounding only


def test_unknown_resample_rejected():
    with pytest.raises(SpecError, match="unknown resample 'nearest'"):
        resize_rgb(gen.source_image(4, 4, 0), 2, 2, "nearest")
    assert issubclass(SpecError, ValueError)


@pytest.mark.parametrize("resample", RESAMPLERS)
def test_identity_is_a_writable_copy(resample):
    src = gen.source_image(7, 5, 0)
    src.flags.writeable = False
    out = resize_rgb(src, 5, 7, resample)
    assert not np.shares_memory(out, src) and out.flags.writeable
    assert np.array_equal(out, src)


@pytest.mark.parametrize("resample", RESAMPLERS)
def test_non_contiguous_input(resample):
    big = gen.source_image(40, 60, 3)
    view = big[5:30:2, 7:50]
    assert not view.flags.c_contiguous
    assert np.array_equal(resize_rgb(view, 17, 9, resample), resize_rgb(view.copy(), 17, 9, resample))


@pytest.mark.parametrize(
    "bad",
    [np.zeros((4, 4), np.uint8), np.zeros((4, 4, 4), np.uint8), np.zeros((4, 4, 3), np.float32), [[1, 2, 3]]],
)
def test_bad_input_rejected(bad):
    with pytest.raises(MediaError, match="resize: expected|3 channels"):
        resize_rgb(bad, 2, 2, "pil_bicubic")


@pytest.mark.parametrize("size", [(0, 2), (2, 0), (-1, 3)])
def test_empty_target_rejected(size):
    with pytest.raises(MediaError, match="empty size"):
        resize_rgb(gen.source_image(4, 4, 0), *size, "aten_u8")


def test_empty_source_rejected():
    with pytest.raises(MediaError, match="empty image"):
        resize_rgb(np.zeros((0, 4, 3), np.uint8), 2, 2, "pil_lanczos")


def test_aten_speed_is_not_pathological():
    src = gen.source_image(960, 1280, 1)
    resize_rgb(src, 1148, 840, "aten_u8")
    t0 = time.perf_counter()
    resize_rgb(src, 1148, 840, "aten_u8")
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("threads", ["inline", 2])
def test_aten_bands_are_byte_identical(monkeypatch, threads):
    """Row bands (any size, any thread count) give the single-call bytes of the fixture."""
    from mm_framework import par
    from mm_framework.kernels import aten

    case = _by_name("qwen_960x1280_840x1148", "aten_u8")
    src = _source(case["h"], case["w"], case["seed"], case["pattern"])
    monkeypatch.setattr(aten, "_BAND_BYTES", 4 * 3 * 1148 * 7)  # 7-row bands: ragged tail
    par.set_threads(threads)
    try:
        out = resize_rgb(src, case["out_w"], case["out_h"], "aten_u8")
    finally:
        par.set_threads(None)
    assert hashlib.sha256(out.tobytes()).hexdigest() == case["sha256"]


# ---------------------------------------------------------------------------
# An independent model of Pillow 13's ImagingResample (src/libImaging/Resample.c), to
# show the "pil_*" bytes are that algorithm with Pillow 13's pass order, not an accident
# of whatever Pillow happens to be installed (docs/architecture.md, "Resize: Pillow").
# ---------------------------------------------------------------------------


def _pil_bicubic(x: float) -> float:
    a = -0.5
    x = abs(x)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _pil_bilinear(x: float) -> float:
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def _pil_lanczos(x: float) -> float:
    def sinc(v: float) -> float:
        return 1.0 if v == 0.0 else math.sin(v * math.pi) / (v * math.pi)

    return sinc(x) * sinc(x / 3) if -3.0 <= x < 3.0 else 0.0


def _pil_pass(src: np.ndarray, axis: int, out_size: int, filt, support: float) -> np.ndarray:
    in_size = src.shape[axis]
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support *= filterscale
    moved = np.moveaxis(src, axis, 0).astype(np.int64)
    out = np.empty((out_size,) + moved.shape[1:], np.int64)
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size) - xmin
        ws = [filt((x + xmin - center + 0.5) * (1.0 / filterscale)) for x in range(xmax)]
        total = sum(ws)  # sequential, as the C loop
        ws = [w / total for w in ws] if total != 0.0 else ws
        acc = np.full(moved.shape[1:], 1 << 21, np.int64)
        for x, w in enumerate(ws):
            acc += moved[xmin + x] * int(w * (1 << 22) + (0.5 if w >= 0 else -0.5))
        out[xx] = np.clip(acc >> 22, 0, 255)
    return np.moveaxis(out, 0, axis).astype(np.uint8)


def _pil13_model(src: np.ndarray, out_w: int, out_h: int, resample: str) -> np.ndarray:
    filt, support = {
        "pil_bicubic": (_pil_bicubic, 2.0),
        "pil_lanczos": (_pil_lanczos, 3.0),
        "pil_bilinear": (_pil_bilinear, 1.0),
    }[resample]
    in_h, in_w = src.shape[:2]
    passes = [(1, out_w), (0, out_h)]
    if (in_h - out_h) > 0 and (in_h - out_h) > 2 * (in_w - out_w):  # Pillow 13: vertical first
        passes.reverse()
    out = src
    for axis, size in passes:
        if out.shape[axis] != size:
            out = _pil_pass(out, axis, size, filt, support)
    return out


_MODEL_SIZES = [(6, 8, 4, 5), (8, 6, 5, 4), (6, 8, 6, 5), (6, 8, 4, 8), (48, 64, 47, 65), (64, 48, 66, 47),
                (37, 53, 74, 106), (1, 1, 2, 2), (40, 3, 39, 5), (3, 40, 5, 39), (30, 20, 12, 19), (20, 30, 19, 12)]
_rng = np.random.default_rng(2024)
_MODEL_SIZES += [tuple(int(v) for v in _rng.integers(1, 48, 4)) for _ in range(12)]


@pytest.mark.parametrize("resample", ["pil_bicubic", "pil_lanczos", "pil_bilinear"])
@pytest.mark.parametrize("size", _MODEL_SIZES, ids=lambda s: "{}x{}-{}x{}".format(*s))
def test_pil_resamplers_equal_the_pillow13_model(size, resample):
    h, w, th, tw = size
    for pattern in ("noise", "binary"):
        src = gen.source_image(h, w, h * 1000 + w, pattern)
        assert np.array_equal(resize_rgb(src, tw, th, resample), _pil13_model(src, tw, th, resample))


def test_pillow13_model_pass_order_is_load_bearing():
    # Where Pillow 13 goes vertical first, the horizontal-first (Pillow <= 12) order differs.
    src = gen.source_image(48, 64, 1, "noise")
    got = resize_rgb(src, 65, 47, "pil_bicubic")
    h_first = _pil_pass(_pil_pass(src, 1, 65, _pil_bicubic, 2.0), 0, 47, _pil_bicubic, 2.0)
    assert not np.array_equal(got, h_first)
