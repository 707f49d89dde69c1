"""Request rows in, result rows out: :func:`process_table` and :func:`process_requests`.

Rows fan out on the ``par`` pool (each row's own items and bands then run inline on its
thread), so a process uses as many cores as ``par`` is sized to, and one bad request is
one error row: every ``MmError`` is caught per row. Anything else is a bug and fails the
call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa

from .. import par
from ..carriers import MRope
from ..errors import InvalidInputError, MmError, UnsupportedError
from ..pipeline import Pipeline
from ..prompt import Tokenize
from ..request import MmInput, Output
from .columns import error_columns, list_column, pair_column
from .schema import PAIRS, PROMPT_COLUMNS, FamilyShape, check_pixels, family_shape, item_columns, result_schema

# One row's result: the output and, unless counting, each item's stored array.
Result = Union[tuple[Output, Union[list[np.ndarray], None]], MmError]


def feature_f32(array: np.ndarray, dtype: str) -> np.ndarray:
    """A feature's values as float32; bf16 is the top half of an f32, so widening is exact
    and the bits come back by taking the top half again."""
    return (array.astype(np.uint32) << 16).view(np.float32) if dtype == "bf16" else array


def _runner(pipeline: Pipeline, pixels: str, tokenize: Tokenize | None) -> Callable[[MmInput], Result]:
    if pixels == "none":
        return lambda inp: (pipeline.count_tokens(inp, tokenize=tokenize), None)
    if pixels == "u8":
        # A family that cannot do this mode at all fails the call, not every row.
        if not pipeline.stores_pixels:
            raise UnsupportedError(f"family {pipeline.family!r} does not implement mm_stored_pixels "
                                   f"(no uint8 pixel storage)")
        return lambda inp: pipeline.stored_pixels(inp, tokenize=tokenize)

    def full(inp: MmInput) -> Result:
        # Every item holds what the family declares: the driver checks it.
        out = pipeline.process(inp, tokenize=tokenize)
        return out, [feature_f32(it.feature.array, it.feature.dtype) for it in out.items]

    return full


def process_requests(
    pipeline: Pipeline,
    requests: Sequence[MmInput | MmError],
    *,
    pixels: str = "f32",
    tokenize: Tokenize | None = None,
    passthrough: pa.Table | None = None,
    modality_names: Sequence[str] = ("image",),
) -> pa.Table:
    """One result row per request (an ``MmError`` in ``requests`` is already an error row),
    ``passthrough`` columns (same row count) first. ``pixels``: ``"f32"`` the features,
    ``"u8"`` the family's stored uint8 pixels, ``"none"`` a token count from headers.
    ``modality_names``: the modalities the requests' items may have (the aux columns are
    theirs): the schema depends on them, never on which rows hold what."""
    check_pixels(pixels)
    if passthrough is not None and passthrough.num_rows != len(requests):
        raise InvalidInputError(f"passthrough has {passthrough.num_rows} rows for {len(requests)} requests")
    spec_json = json.dumps(pipeline.spec, sort_keys=True)
    kinds = tuple(modality_names)
    schema = result_schema(spec_json, pixels, None if passthrough is None else passthrough.schema, kinds)
    shape = family_shape(spec_json, kinds) if pixels == "f32" else None
    run = _runner(pipeline, pixels, tokenize)

    def one(_: int, req: MmInput | MmError) -> Result:
        if isinstance(req, MmError):
            return req
        try:
            return run(req)
        except MmError as e:
            return e

    results = par.try_map(one, list(requests))
    return _table(schema, results, passthrough, shape)


def _table(
    schema: pa.Schema, results: list[Result], passthrough: pa.Table | None, shape: FamilyShape | None
) -> pa.Table:
    outs = [None if isinstance(r, MmError) else r[0] for r in results]
    cols: dict[str, pa.Array | pa.ChunkedArray] = {}
    if passthrough is not None:
        cols.update(zip(passthrough.column_names, passthrough.columns))
    cols["input_ids"] = list_column([None if o is None else o.input_ids for o in outs], schema.field("input_ids").type)
    cols["num_tokens"] = pa.array([None if o is None else len(o.input_ids) for o in outs], pa.int64())
    hashes = [None if o is None else np.array([it.hash for it in o.items], np.uint64) for o in outs]
    cols["mm_hashes"] = list_column(hashes, schema.field("mm_hashes").type)
    modalities = [None if o is None else [it.modality for it in o.items] for o in outs]
    cols["mm_modalities"] = pa.array(modalities, schema.field("mm_modalities").type)
    cols["mm_offsets"] = pair_column([None if o is None else o.offsets for o in outs], PAIRS)
    cols["mm_sizes"] = pair_column([None if o is None else [it.size for it in o.items] for o in outs], PAIRS)
    processed = [None if o is None else [it.processed_size for it in o.items] for o in outs]
    cols["mm_processed_sizes"] = pair_column(processed, PAIRS)
    mrope = [o.positions if o is not None and isinstance(o.positions, MRope) else None for o in outs]
    positions = [None if m is None else m.positions.reshape(-1) for m in mrope]
    cols["mrope_positions"] = list_column(positions, schema.field("mrope_positions").type)
    cols["mrope_delta"] = pa.array([None if m is None else m.delta for m in mrope], pa.int64())
    if "pixel_values" in schema.names:
        stored = [None if isinstance(r, MmError) else r[1] for r in results]
        flat = [None if s is None else [a.reshape(-1) for a in s] for s in stored]
        cols["pixel_values"] = list_column(flat, schema.field("pixel_values").type)
        shapes = [None if s is None else [list(a.shape) for a in s] for s in stored]
        cols["pixel_values_shape"] = pa.array(shapes, schema.field("pixel_values_shape").type)
    for name in shape.aux if shape is not None else ():
        # Each row holds the aux of its items that have it (all of them, for one modality).
        having = [None if o is None else [it.aux[name].array.reshape(-1) for it in o.items if name in it.aux]
                  for o in outs]
        aux = [None if h is None else np.stack(h) if h else None for h in having]
        cols[name] = list_column(aux, schema.field(name).type)
    cols.update(error_columns(results))
    return pa.Table.from_arrays([cols[n] for n in schema.names], schema=schema)


def requests_from_table(table: pa.Table) -> list[MmInput | MmError]:
    """Each row as a request: its items from the columns named by a modality's keyword
    (``images``, ``videos``, ...: one source or a list of them: path, URL, data URI or
    base64 text, or raw bytes), ``input_ids`` or ``text``; a malformed row is its error."""
    columns = {c: m for c, m in item_columns().items() if c in table.column_names}
    if not columns:
        raise InvalidInputError(
            f"the table has no item column ({', '.join(item_columns())}); columns: {table.column_names}"
        )
    nulls = [None] * table.num_rows
    ids, texts = (table.column(n).to_pylist() if n in table.column_names else nulls for n in PROMPT_COLUMNS)
    values = {c: table.column(c).to_pylist() for c in columns}
    out: list[MmInput | MmError] = []
    for r, (row_ids, text) in enumerate(zip(ids, texts)):
        try:
            items = {c: _sources(values[c][r]) for c in columns}
            out.append(MmInput(input_ids=row_ids, text=text, **items))
        except MmError as e:
            out.append(e)
    return out


def _sources(value: Any) -> list[Any]:
    return [] if value is None else [value] if isinstance(value, (str, bytes)) else value


def table_modalities(table: pa.Table) -> tuple[str, ...]:
    """The modalities of the table's item columns, in registration order."""
    return tuple(m for c, m in item_columns().items() if c in table.column_names)


def process_table(
    pipeline: Pipeline, table: pa.Table | pa.RecordBatch, *, pixels: str = "f32", tokenize: Tokenize | None = None
) -> pa.Table:
    """Request rows -> result rows with one fixed schema (docs/batch.md, "Schema").

    Columns other than the item columns, ``input_ids`` and ``text`` (an ``id``, labels) pass
    through unchanged, first.
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    keep = [n for n in table.column_names if n not in PROMPT_COLUMNS and n not in item_columns()]
    return process_requests(
        pipeline, requests_from_table(table), pixels=pixels, tokenize=tokenize, passthrough=table.select(keep),
        modality_names=table_modalities(table),
    )
