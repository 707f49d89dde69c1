"""Reading result rows back: exact features and the model's keyword tensors.

A row is a one-row ``pyarrow.Table``/``RecordBatch`` (``table.slice(i, 1)``: no copy,
and its schema metadata names the spec) or a mapping of column to value (``to_pylist()``
rows, Ray rows). A mapping carries no metadata, and no column names the family, so
``model_kwargs`` of a mapping always needs ``spec=``, and so does ``pixel_values`` of a
uint8 one; ``pixel_values`` of a float32 mapping needs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ..carriers import OutputItem, Tensor
from ..errors import InvalidInputError
from ..family import hooks_for
from .process import feature_f32
from .schema import ARROW_DTYPES, family_shape, metadata, spec_of


def _fields(row: Any) -> tuple[Mapping[str, Any], dict[str, str]]:
    if isinstance(row, (pa.Table, pa.RecordBatch)):
        if row.num_rows != 1:
            raise InvalidInputError(f"expected one row, got {row.num_rows}: pass table.slice(i, 1)")
        return {name: row.column(name)[0] for name in row.column_names}, metadata(row.schema)
    if isinstance(row, Mapping):
        return row, {}
    raise InvalidInputError(f"a row is a one-row pyarrow Table/RecordBatch or a mapping, got {type(row).__name__}")


def _numpy(value: Any) -> np.ndarray:
    if isinstance(value, pa.Scalar):
        value = value.values if isinstance(value, (pa.ListScalar, pa.LargeListScalar)) else value.as_py()
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value.to_numpy(zero_copy_only=False)
    return np.asarray(value)


def _value(value: Any) -> Any:
    return value.as_py() if isinstance(value, pa.Scalar) else value


def _stored(row: Any, spec: Any) -> tuple[list[np.ndarray], str | None, Mapping[str, Any]]:
    """Each item's stored array, the spec JSON when known, and the row's fields."""
    fields, meta = _fields(row)
    error = _value(fields.get("error"))
    if error is not None:
        raise InvalidInputError(f"an error row has no pixels ({_value(fields.get('error_type'))}: {error})")
    if "pixel_values" not in fields:
        raise InvalidInputError("this row has no pixel_values column (a token count, pixels='none')")
    flat = _numpy(fields["pixel_values"])
    if flat.dtype.kind in "iu" and flat.dtype != np.uint8:
        # Python lists (to_pylist rows) lose the uint8 dtype of stored pixels.
        if len(flat) and (flat.min() < 0 or flat.max() > 255):
            raise InvalidInputError("pixel_values: integer values outside 0..255 are not stored uint8 pixels")
        flat = flat.astype(np.uint8)
    shapes = [[int(d) for d in s] for s in _listed(fields["pixel_values_shape"])]
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    if sum(sizes) != len(flat):
        raise InvalidInputError(f"pixel_values holds {len(flat)} values but its shapes {shapes} need {sum(sizes)}")
    ends = np.cumsum(sizes)
    arrays = [flat[end - size : end].reshape(shape) for shape, size, end in zip(shapes, sizes, ends)]
    known = spec_of(meta, spec) if spec is not None or "spec" in meta else None
    return arrays, known, fields


def _listed(value: Any) -> list[Any]:
    value = _value(value)
    return [] if value is None else list(value)


def _rebuilt(stored: list[np.ndarray], spec_json: str | None) -> list[Any]:
    if spec_json is None:
        raise InvalidInputError("rebuilding features from uint8 pixels needs the spec: pass spec=")
    hooks = hooks_for(spec_json)
    return [hooks.features_from_pixels(np.ascontiguousarray(a), i) for i, a in enumerate(stored)]


def pixel_values(row: Any, *, spec: Any = None) -> list[np.ndarray]:
    """Each item's features as float32, exactly as ``Pipeline.process`` made them, from
    either storage: float32 values (``pixels="f32"``), or the family's uint8 pixels
    (``pixels="u8"``) run through ``mm_features_from_pixels``. bf16 features come back
    widened to float32 (exact; ``model_kwargs`` gives the bf16 bits)."""
    stored, spec_json, _ = _stored(row, spec)
    if all(a.dtype.kind == "f" for a in stored):
        return [a.astype(np.float32, copy=False) for a in stored]
    return [feature_f32(p.feature.array, p.feature.dtype) for p in _rebuilt(stored, spec_json)]


def model_kwargs(row: Any, *, spec: Any = None) -> dict[str, np.ndarray]:
    """The model runner's keyword tensors for the row's request, byte-equal to
    ``Output.model_kwargs()`` of the request processed directly."""
    stored, spec_json, fields = _stored(row, spec)
    if spec_json is None:
        raise InvalidInputError(
            "model_kwargs needs the spec, and this row has no schema metadata naming it (a mapping such as a "
            "to_pylist() or Ray row never has; no column names the family, whose hook builds the tensors): "
            "pass spec= (a dict, JSON or Pipeline)"
        )
    hashes = [int(h) for h in _listed(fields["mm_hashes"])]
    if not stored:
        raise InvalidInputError("this row holds no items, so no model inputs")
    # Rows written before mm_modalities existed held images only.
    kinds = [str(m) for m in _listed(fields.get("mm_modalities"))] or ["image"] * len(stored)
    if len(kinds) != len(stored):
        raise InvalidInputError(f"mm_modalities names {len(kinds)} item(s) for {len(stored)} stored array(s)")
    if all(a.dtype.kind == "f" for a in stored):
        feature_dtype, declared = _declared(spec_json, tuple(sorted(set(kinds))))
        features = [_feature(a, feature_dtype) for a in stored]
        # Each aux column lists, in item order, the tensors of the items whose modality declares it.
        outputs = hooks_for(spec_json).capabilities().outputs
        columns = {name: iter(_listed(fields[name])) for name in declared if name in fields}
        aux = [
            {
                name: Tensor(np.asarray(next(columns[name]), ARROW_DTYPES[dtype].to_pandas_dtype()).reshape(dims),
                             dtype)
                for name, (dtype, dims) in (outputs[kind].aux.items() if kind in outputs else ())
                if name in columns
            }
            for kind in kinds
        ]
    else:
        made = _rebuilt(stored, spec_json)
        features, aux = [p.feature for p in made], [p.aux for p in made]
    items = [OutputItem(f, a, h, modality=k) for f, a, h, k in zip(features, aux, hashes, kinds)]
    return hooks_for(spec_json).model_kwargs(items)


def _declared(spec_json: str, kinds: tuple[str, ...]) -> tuple[str, dict[str, tuple[str, tuple[int, ...]]]]:
    """The family's feature dtype and every aux tensor it declares for the row's modalities."""
    shape = family_shape(spec_json, kinds)
    return shape.feature_dtype, dict(shape.aux)


def _feature(values: np.ndarray, dtype: str) -> Tensor:
    values = values.astype(np.float32, copy=False)
    return Tensor.bf16(values.view(np.uint32) >> 16) if dtype == "bf16" else Tensor.f32(values)
