"""Comparing what ``mm_framework.hf.accelerate`` returns with the transformers processor's own
``BatchFeature``, for a family's adapter tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def assert_same_batch(want: Mapping[str, Any], got: Mapping[str, Any], keys: Sequence[str] | None = None) -> None:
    """The same keys in the same order (``keys`` when given), and per key the same type (numpy
    array or torch tensor), dtype, shape and bytes."""
    assert list(got.keys()) == list(want.keys()), (list(want.keys()), list(got.keys()))
    if keys is not None:
        assert list(want.keys()) == list(keys), (list(keys), list(want.keys()))
    for k in want:
        a, b = want[k], got[k]
        assert type(a) is type(b), (k, type(a), type(b))
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), (k, a.dtype, b.dtype, a.shape, b.shape)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), k
