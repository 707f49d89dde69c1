"""Datasets as Arrow tables: request rows in, result rows with one fixed schema out.

Engine-neutral: ``mm-framework batch`` writes these tables to Parquet shards, and
:mod:`mm_framework.ray` runs :func:`process_table` on Ray Data blocks. The schema, the
three pixel modes and the metadata are described in docs/batch.md.

* :func:`process_table` / :func:`process_requests`: requests to result rows;
* :func:`pixel_values` / :func:`model_kwargs`: a result row back to exact features and
  the model's keyword tensors;
* :func:`result_schema`, :data:`SCHEMA_VERSION`, :data:`PIXEL_MODES`.

Needs pyarrow (``pip install 'mm-framework[batch]'``).
"""

from __future__ import annotations

try:
    import pyarrow  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("mm_framework.arrow needs pyarrow: pip install 'mm-framework[batch]'") from e

from .process import process_requests, process_table, requests_from_table
from .read import model_kwargs, pixel_values
from .schema import PIXEL_MODES, SCHEMA_VERSION, metadata, result_schema

__all__ = [
    "PIXEL_MODES", "SCHEMA_VERSION", "metadata", "model_kwargs", "pixel_values", "process_requests", "process_table",
    "requests_from_table", "result_schema",
]
