"""Sizing pins (HF smart_resize, scaled_dims) and the transformers sweep."""

from __future__ import annotations

import pytest

from .kernel_refs import SCALED_DIMS_PINS, fixture
from mm_framework.errors import MediaError, SpecError
from mm_framework.kernels import scaled_dims, smart_resize

# docs/architecture.md "Sizing" pins; the HF and crate formulas agree on these.
SMART_RESIZE_PINS = [
    ((1365, 2048, 28, 3136, 12845056), (1372, 2044)),
    ((100, 100, 28, 3136, 1003520), (112, 112)),
    ((100, 100, 28, 3136, 12845056), (112, 112)),
    ((3000, 4000, 28, 3136, 1003520), (840, 1148)),
    ((20, 20, 28, 3136, 12845056), (56, 56)),
    ((1365, 2048, 32, 65536, 16777216), (1376, 2048)),
    ((4000, 48, 32, 4, 2**30), (4000, 64)),  # tie 48/32 = 1.5 rounds to 2
    # transformers examples (factor 28, class defaults)
    ((10, 10, 28, 3136, 1003520), (56, 56)),
    ((70, 98, 28, 3136, 1003520), (56, 112)),  # 70/28 = 2.5 -> 2, 98/28 = 3.5 -> 4
    ((3000, 20, 28, 3136, 1003520), (2996, 28)),
    ((960, 1280, 28, 3136, 1003520), (840, 1148)),
    ((1080, 1920, 28, 3136, 1003520), (728, 1316)),
    # the reference image set
    ((3000, 4000, 28, 3136, 12845056), (2996, 4004)),
    ((3000, 4000, 32, 65536, 16777216), (3008, 4000)),
    ((480, 640, 28, 3136, 1003520), (476, 644)),
    ((960, 1280, 32, 65536, 16777216), (960, 1280)),
    ((1080, 1920, 28, 3136, 12845056), (1092, 1932)),
    ((10, 10, 32, 65536, 16777216), (256, 256)),
    ((501, 333, 28, 3136, 1003520), (504, 336)),
    ((100, 200, 32, 65536, 16777216), (192, 384)),
]

# The divergence table (docs/architecture.md, "Sizing"): the project follows HF (transformers 5.24),
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




@pytest.mark.parametrize(("args", "want"), SCALED_DIMS_PINS)
def test_scaled_dims_pins(args, want):
    assert scaled_dims(*args) == want


def test_smart_resize_matches_transformers_sweep():
    """transformers 5.24 ``smart_resize`` over ~600 sizes x 7 budgets (fixture from the real function)."""
    doc = fixture("smart_resize.json")
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
