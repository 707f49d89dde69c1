"""Comparing two outputs byte for byte, naming the first thing that differs."""

from __future__ import annotations

import numpy as np

from ..request import Output


def assert_same_output(a: Output, b: Output, what: str) -> None:
    assert np.array_equal(a.input_ids, b.input_ids), f"{what}: input_ids differ"
    assert a.offsets == b.offsets, f"{what}: offsets differ"
    assert a.positions == b.positions, f"{what}: positions differ"
    for i, (x, y) in enumerate(zip(a.items, b.items, strict=True)):
        assert x.hash == y.hash, f"{what}: item {i} hash differs"
        assert (x.geometry, x.size, x.processed_size) == (y.geometry, y.size, y.processed_size), (
            f"{what}: item {i} geometry or sizes differ"
        )
        assert x.feature.dtype == y.feature.dtype and x.feature.array.tobytes() == y.feature.array.tobytes(), (
            f"{what}: item {i} feature bytes differ"
        )
        assert sorted(x.aux) == sorted(y.aux), f"{what}: item {i} aux names differ"
        for k in x.aux:
            assert x.aux[k].array.tobytes() == y.aux[k].array.tobytes(), f"{what}: item {i} aux {k} differs"
