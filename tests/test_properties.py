"""Property tests of the core's pure parts (hypothesis, bounded example counts)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mm_framework as mmf
from mm_framework import LayoutError
from mm_framework.plugin import Explicit, Media, Repeat, Text, TokenLayout, apply_layout, layout_by_placeholder
from mm_framework.kernels import scaled_dims, smart_resize

PAD = 1
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

patterns = st.one_of(
    st.builds(Repeat, st.integers(-5, 50), st.integers(1, 6)),
    st.lists(st.integers(0, 99), min_size=1, max_size=6).flatmap(
        lambda ids: st.tuples(st.integers(0, len(ids) - 1), st.integers(1, len(ids))).filter(
            lambda r: r[0] < r[1]).map(lambda r: Explicit(ids, r[0], r[1]))
    ),
)


@st.composite
def valid_layouts(draw):
    """A source prompt with media slots, and a layout that covers it exactly."""
    n_items = draw(st.integers(0, 5))
    text_runs = draw(st.lists(st.lists(st.integers(2, 99), max_size=4), min_size=n_items + 1, max_size=n_items + 1))
    order = draw(st.permutations(range(n_items)))
    pats = [draw(patterns) for _ in range(n_items)]
    src, segments = [], []
    for k in range(n_items + 1):
        run = text_runs[k]
        segments.append(Text(len(src), len(src) + len(run)))
        src += run
        if k < n_items:
            segments.append(Media(order[k], pats[k]))
            src.append(PAD)
    return src, segments, n_items, pats, order


@SETTINGS
@given(valid_layouts())
def test_valid_layouts_expand_to_the_sum_of_their_parts(case):
    src, segments, n, pats, order = case
    out = apply_layout(src, TokenLayout(segments), n)
    text_len = sum(s.end - s.start for s in segments if isinstance(s, Text))
    pat_len = sum(p.n if isinstance(p, Repeat) else len(p.ids) for p in pats)
    assert len(out.input_ids) == text_len + pat_len
    for k, p in enumerate(pats):
        s, e = out.offsets[order[k]]
        got = out.input_ids[s : e + 1].tolist()
        want = [p.id] * p.n if isinstance(p, Repeat) else list(p.ids[p.content_start : p.content[1]])
        assert got == want


segments = st.lists(
    st.one_of(
        st.builds(Text, st.integers(0, 8), st.integers(0, 8)),
        st.builds(Media, st.integers(0, 3), patterns),
    ),
    max_size=7,
)


@SETTINGS
@given(st.lists(st.integers(-3, 9), max_size=8), segments, st.integers(0, 3))
def test_any_layout_is_applied_or_rejected_with_layout_error(src, segs, n):
    try:
        out = apply_layout(src, TokenLayout(segs), n)
    except LayoutError:
        return
    assert len(out.offsets) == n
    covered = sum(s.end - s.start for s in segs if isinstance(s, Text)) + sum(isinstance(s, Media) for s in segs)
    assert covered == len(src)
    for s, e in out.offsets:
        assert 0 <= s <= e < len(out.input_ids)


@SETTINGS
@given(st.lists(st.sampled_from([PAD, 5, 6, 7]), max_size=12), st.lists(st.integers(0, 4), max_size=5))
def test_layout_by_placeholder(ids, counts):
    try:
        layout = layout_by_placeholder(ids, PAD, counts)
    except LayoutError as e:
        assert ids.count(PAD) != len(counts) and "placeholder" in str(e)
        return
    try:
        out = apply_layout(ids, layout, len(counts))
    except LayoutError as e:
        assert 0 in counts and "zero tokens" in str(e)
        return
    assert len(out.input_ids) == len(ids) - len(counts) + sum(counts)
    assert [e - s + 1 for s, e in out.offsets] == counts
    assert out.input_ids[np.asarray(out.input_ids) != PAD].tolist() == [i for i in ids if i != PAD]


@SETTINGS
@given(st.integers(1, 20000), st.integers(1, 20000), st.sampled_from([28, 32]),
       st.sampled_from([(3136, 1003520), (3136, 12845056), (65536, 16777216), (4, 2**30)]))
def test_smart_resize_invariants(h, w, factor, bounds):
    lo, hi = bounds
    try:
        th, tw = smart_resize(h, w, factor, lo, hi)
    except mmf.MediaError as e:
        # Refused for the aspect ratio, or because a side degenerates to 0.
        assert ("aspect ratio" in str(e)) == (max(h, w) / min(h, w) > 200), str(e)
        return
    assert max(h, w) / min(h, w) <= 200
    assert th % factor == 0 and tw % factor == 0 and th >= factor and tw >= factor
    if th * tw > hi:
        # Only the ceil (upscale) branch may overshoot, by less than one factor row/column.
        assert (th - factor) * (tw - factor) <= hi
    # Aspect ratio is kept within rounding: both sides come from one scale beta, each
    # rounded to a multiple of the factor, so some beta has |th - h*beta| <= factor and
    # |tw - w*beta| <= factor, i.e. the two intervals of admissible betas overlap.
    lo = max((th - factor) / h, (tw - factor) / w)
    hi_beta = min((th + factor) / h, (tw + factor) / w)
    assert lo <= hi_beta + 1e-9, (th, tw)


@SETTINGS
@given(st.integers(0, 5000), st.integers(0, 5000),
       st.one_of(st.none(), st.floats(0.05, 4.0)), st.one_of(st.none(), st.integers(1, 4096)))
def test_scaled_dims_invariants(w, h, frac, cap):
    nw, nh = scaled_dims(w, h, frac, cap)
    long = max(w, h)
    if frac is None or long == 0:
        assert (nw, nh) == (w, h)
        return
    target = long * frac
    if cap is not None:
        target = min(target, max(cap, long))
    if target / long == 1.0:
        assert (nw, nh) == (w, h)
        return
    assert nw >= 1 and nh >= 1
    assert abs(max(nw, nh) - target) <= 0.5 + 1e-6 or max(nw, nh) == 1
    if cap is not None and frac > 1:
        assert max(nw, nh) <= max(cap, max(w, h))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _families():
    return [f["name"] for f in mmf.list_families()]


@pytest.mark.usefixtures("toy")
@SETTINGS
@given(data=st.data())
def test_spec_parsing_only_raises_spec_error(data):
    family = data.draw(st.sampled_from(sorted(set(_families()) | {"toy", "nope"})))
    presets = [p for p in mmf.list_presets().values() if p["family"] == family]
    base = dict(data.draw(st.sampled_from(presets))) if presets else {"family": family}
    mutate = data.draw(st.dictionaries(st.sampled_from(sorted(base) + ["extra"]), json_values, max_size=3))
    spec = {**base, **mutate, "family": family}
    try:
        text = json.dumps(spec)
    except ValueError:
        return
    try:
        mmf.pipeline_from_spec(text)
    except mmf.SpecError:
        pass


def test_scaled_dims_never_nan_for_extremes():
    assert scaled_dims(1, 1, 1e-9, None) == (1, 1)
    assert all(math.isfinite(v) for v in scaled_dims(4000, 3000, 2.0, 2048))
