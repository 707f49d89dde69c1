"""Building result columns from numpy without a Python loop over values.

Large lists (pixels, positions) are one concatenated numpy buffer plus offsets, so a
batch of images becomes Arrow with one copy; nulls are the error rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import MmError


def list_column(rows: Sequence[np.ndarray | list[np.ndarray] | None], typ: pa.DataType) -> pa.Array:
    """A ``list``/``large_list`` column, one list per row (``None`` is a null row).

    The value type is a primitive (rows are 1-D) or ``fixed_size_list<k>`` (rows are
    ``[n, k]``). A row may also be a list of such arrays, joined in order (the features
    of a request's items, copied once, straight into the column's buffer).
    """
    value_type = typ.value_type
    fixed = pa.types.is_fixed_size_list(value_type)
    leaf = value_type.value_type if fixed else value_type
    dtype = leaf.to_pandas_dtype()
    parts = [[] if r is None else list(r) if isinstance(r, list) else [r] for r in rows]
    lengths = np.fromiter((sum(len(p) for p in ps) for ps in parts), np.int64, len(rows))
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    chunks = [np.asarray(p, dtype=dtype).reshape(-1) for ps in parts for p in ps]
    flat = np.concatenate(chunks) if chunks else np.zeros(0, dtype)
    values = pa.array(flat, type=leaf)
    if fixed:
        values = pa.FixedSizeListArray.from_arrays(values, value_type.list_size)
    large = pa.types.is_large_list(typ)
    mask = pa.array(np.fromiter((r is None for r in rows), bool, len(rows)))
    cls = pa.LargeListArray if large else pa.ListArray
    return cls.from_arrays(pa.array(offsets, pa.int64() if large else pa.int32()), values, type=typ, mask=mask)


def pair_column(rows: Sequence[Sequence[Sequence[int] | None] | None], typ: pa.DataType) -> pa.Array:
    """``list<fixed_size_list<int64, 2>>``: per row, one pair per item (``None``: a null
    pair, e.g. a processed size the family does not report)."""
    listed = [None if r is None else [None if p is None else [int(v) for v in p] for p in r] for r in rows]
    return pa.array(listed, typ)


def error_columns(results: Sequence[Any]) -> dict[str, pa.Array]:
    """``error_type`` (the ``MmError`` class) and ``error`` (its message), null when ok."""
    errors = [r if isinstance(r, MmError) else None for r in results]
    return {
        "error_type": pa.array([None if e is None else type(e).__name__ for e in errors], pa.string()),
        "error": pa.array([None if e is None else str(e) for e in errors], pa.string()),
    }
