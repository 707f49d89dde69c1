"""Image-only M-RoPE against the reference example and a direct per-token reference."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import Grid, LayoutError, mrope_image_only


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
