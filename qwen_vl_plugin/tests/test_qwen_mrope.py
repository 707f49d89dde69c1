"""Image-only M-RoPE (``mrope_image_only``) against the reference example and a direct
per-token reference, on fixed cases and hypothesis-drawn ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mm_framework import Grid, LayoutError
from mm_framework.plugin import mrope
from qwen_vl_plugin.mrope import IMAGE, rope_index

mrope_image_only = mrope.image_only


def test_reference_example():
    out = mrope_image_only(11, [(3, 8, Grid(1, 4, 6))], 2)
    cols = [tuple(out.positions[:, i]) for i in range(11)]
    assert cols == [
        (0, 0, 0), (1, 1, 1), (2, 2, 2),
        (3, 3, 3), (3, 3, 4), (3, 3, 5), (3, 4, 3), (3, 4, 4), (3, 4, 5),
        (6, 6, 6), (7, 7, 7),
    ]
    assert out.delta == -3
    assert out.positions.dtype == np.int64 and out.positions.shape == (3, 11)


def direct(L, items, m):
    """Token-by-token reference, written independently of the vectorised code."""
    pos, nxt, st = [], 0, 0
    for start, end, g in items:
        for _ in range(st, start):
            pos.append((nxt, nxt, nxt))
            nxt += 1
        gh, gw = g.h // m, g.w // m
        for t in range(g.t):
            for h in range(gh):
                for w in range(gw):
                    pos.append((nxt + t, nxt + h, nxt + w))
        nxt += max(g.t, gh, gw)
        st = end + 1
    for _ in range(st, L):
        pos.append((nxt, nxt, nxt))
        nxt += 1
    arr = np.array(pos, dtype=np.int64).T.reshape(3, L)
    return arr, (int(arr.max()) + 1 - L if L else 0)


def test_multi_image_matches_direct_reference():
    items = [(2, 7, Grid(1, 4, 6)), (8, 9, Grid(1, 2, 4)), (11, 22, Grid(1, 8, 6))]
    out = mrope_image_only(25, items, 2)
    ref, delta = direct(25, items, 2)
    assert np.array_equal(out.positions, ref) and out.delta == delta


def test_empty_input_has_zero_delta():
    out = mrope_image_only(0, [], 2)
    assert out.positions.shape == (3, 0) and out.delta == 0


@pytest.mark.parametrize(
    "items, msg",
    [
        ([(3, 8, Grid(1, 4, 4))], "token span does not match grid"),
        ([(3, 11, Grid(1, 4, 6))], r"item range \(3,11\) out of order/bounds"),
        ([(3, 8, Grid(1, 4, 6)), (2, 2, Grid(1, 2, 2))], r"item range \(2,2\) out of order/bounds"),
    ],
)
def test_rejects_bad_items(items, msg):
    with pytest.raises(LayoutError, match=msg):
        mrope_image_only(11, items, 2)


@st.composite
def mrope_cases(draw):
    m = draw(st.sampled_from([1, 2]))
    L, items = 0, []
    for _ in range(draw(st.integers(0, 4))):
        L += draw(st.integers(0, 4))
        g = Grid(1, m * draw(st.integers(1, 4)), m * draw(st.integers(1, 4)))
        n = (g.h // m) * (g.w // m)
        items.append((L, L + n - 1, g))
        L += n
    L += draw(st.integers(0, 4))
    return L, items, m


@settings(max_examples=150, deadline=None)
@given(mrope_cases())
def test_mrope_matches_direct_reference(case):
    L, items, m = case
    out = mrope_image_only(L, items, m)
    ref, delta = direct(L, items, m)
    assert np.array_equal(out.positions, ref) and out.delta == delta


@settings(max_examples=150, deadline=None)
@given(mrope_cases())
def test_image_only_path_equals_the_general_one(case):
    """The fast path gives what ``rope_index`` (any mix of images and videos) gives for images,
    adjacent ones included once their starts are run boundaries."""
    L, items, m = case
    assume(L > 0)
    types = np.zeros(L, dtype=np.int64)
    for s, e, _ in items:
        types[s : e + 1] = IMAGE
    positions, delta = rope_index(types, [(g.t, g.h, g.w) for _, _, g in items], merge=m,
                                  run_starts=[s for s, _, _ in items])
    out = mrope_image_only(L, items, m)
    assert np.array_equal(out.positions, positions) and out.delta == delta


def test_run_starts_split_adjacent_items_and_change_nothing_else():
    # Two 2x2-merged images side by side, then text: without the boundary one run of 8
    # tokens meets a grid of 4 (get_rope_index fails there too).
    types = [IMAGE] * 8 + [0]
    with pytest.raises(LayoutError, match="a run of 8 vision tokens at 0"):
        rope_index(types, [(1, 4, 4), (1, 4, 4)], merge=2)
    pos, delta = rope_index(types, [(1, 4, 4), (1, 4, 4)], merge=2, run_starts=[0, 4])
    assert pos.T.tolist() == [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1],
                              [2, 2, 2], [2, 2, 3], [2, 3, 2], [2, 3, 3], [4, 4, 4]]
    assert delta == -4
    # Where runs already start (type changes, the sequence's ends) the boundaries add nothing.
    parted = [0, IMAGE, IMAGE, IMAGE, IMAGE, 0]
    want = rope_index(parted, [(1, 4, 4)], merge=2)
    got = rope_index(parted, [(1, 4, 4)], merge=2, run_starts=[0, 1, 5, 6])
    assert np.array_equal(got[0], want[0]) and got[1] == want[1]
