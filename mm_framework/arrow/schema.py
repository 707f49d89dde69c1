"""The result schema: fixed columns, the family's aux columns, and the file metadata.

Every table :func:`~.process.process_table` returns for one spec and pixel mode has
exactly this schema, whatever its rows hold (all errors, no rows, any image sizes), so
shards written by different workers concatenate and plain ``pyarrow.parquet.read_table``
reads them; the columns are documented in docs/batch.md, "Schema".
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import platform
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
import pyarrow as pa

from .. import __version__
from ..errors import InvalidInputError, SpecError
from ..family import hooks_for
from ..plugins import modalities

SCHEMA_VERSION = "1"
PIXEL_MODES = ("f32", "u8", "none")
# Metadata keys, all under this prefix (bytes, as Arrow stores them).
META = "mm_framework."
# Input columns a request's prompt is read from; its items come from the columns named by
# registered modalities' keywords (images, videos, ...); every other column passes through.
PROMPT_COLUMNS = ("input_ids", "text")


def item_columns() -> dict[str, str]:
    """``{column: modality}``: the request columns that hold items."""
    return {m.keyword: m.name for m in modalities().values()}



def list_of(value: pa.DataType, size: int = -1, *, large: bool = False) -> pa.DataType:
    """A list type whose child is named ``element``, as Parquet names it: the schema
    read back from a file is then equal to the one written."""
    child = pa.field("element", value)
    return pa.large_list(child) if large else pa.list_(child, size)


PAIRS = list_of(list_of(pa.int64(), 2))
_CORE = [
    pa.field("input_ids", list_of(pa.int64())),
    pa.field("num_tokens", pa.int64()),
    pa.field("mm_hashes", list_of(pa.uint64())),
    pa.field("mm_modalities", list_of(pa.string())),
    pa.field("mm_offsets", PAIRS),
    pa.field("mm_sizes", PAIRS),
    pa.field("mm_processed_sizes", PAIRS),
    # [3, L] row-major; null for families with 1-D positions.
    pa.field("mrope_positions", list_of(pa.int64(), large=True)),
    pa.field("mrope_delta", pa.int64()),
]
_PIXELS = {"f32": pa.float32(), "u8": pa.uint8()}
_ERRORS = [pa.field("error_type", pa.string()), pa.field("error", pa.string())]
# pandas makes an integer column with nulls (error rows; 1-D positions) float64 with NaN,
# unless the schema's pandas metadata names the nullable Int64 dtype; other readers ignore it.
_PANDAS = json.dumps({
    "index_columns": [], "column_indexes": [],
    "columns": [
        {"name": name, "field_name": name, "pandas_type": "int64", "numpy_type": "Int64", "metadata": None}
        for name in ("num_tokens", "mrope_delta")
    ],
})
# Tensor dtypes as Arrow stores them: bf16 keeps its bit pattern.
ARROW_DTYPES = {"f32": pa.float32(), "i64": pa.int64(), "bf16": pa.uint16()}


def check_pixels(pixels: str) -> str:
    if pixels not in PIXEL_MODES:
        raise SpecError(f"pixels must be one of {', '.join(PIXEL_MODES)}, got {pixels!r}")
    return pixels


@attrs.frozen
class FamilyShape:
    """What a family's processed items hold besides their size: the feature dtype and each
    aux tensor's dtype and shape (fixed per spec; a row that differs is an error row)."""

    feature_dtype: str
    aux: Mapping[str, tuple[str, tuple[int, ...]]]


@functools.lru_cache(maxsize=16)
def family_shape(spec_json: str, modality_names: tuple[str, ...] = ("image",)) -> FamilyShape:
    """What items of these modalities hold, as the family declares it (``Capabilities.outputs``):
    one feature dtype, and the aux tensors of all of them (an item fills its own)."""
    hooks = hooks_for(spec_json)
    declared = hooks.capabilities().outputs
    missing = [m for m in modality_names if m not in declared]
    if missing:
        raise SpecError(
            f"family {hooks.family!r} declares no outputs for {missing[0]} items (Capabilities.outputs): "
            f"no dataset columns for them"
        )
    dtypes = sorted({declared[m].feature for m in modality_names})
    if len(dtypes) > 1:
        raise SpecError(f"family {hooks.family!r}: features of {', '.join(modality_names)} differ in dtype {dtypes}: "
                        f"one table cannot hold them")
    if dtypes[0] == "u8":
        # Their PixelNorm would not survive the table: store the resized pixels (pixels="u8"), which
        # are smaller still and give these patches back.
        raise SpecError(f"family {hooks.family!r}: u8 patches (spec pixels='u8') are for handing to an engine; "
                        f"a dataset stores the f32 features or the resized pixels (pixels='u8' of the dataset)")
    aux: dict[str, tuple[str, tuple[int, ...]]] = {}
    for m in modality_names:
        for name, (dtype, dims) in declared[m].aux.items():
            if aux.setdefault(name, (dtype, dims)) != (dtype, dims):
                raise SpecError(f"family {hooks.family!r}: aux {name!r} differs between modalities")
    return FamilyShape(dtypes[0], dict(sorted(aux.items())))


def _aux_fields(shape: FamilyShape) -> list[pa.Field]:
    return [
        pa.field(name, list_of(list_of(ARROW_DTYPES[dtype], int(np.prod(dims, dtype=np.int64)))))
        for name, (dtype, dims) in shape.aux.items()
    ]


@functools.lru_cache(maxsize=16)
def versions(family: str) -> dict[str, str]:
    """Library versions a run's bytes depend on (the family's distribution included).
    Cached: reading distribution metadata costs milliseconds, every batch would pay it."""
    from ..plugins import families

    info = families().get(family)
    found = {"mm_framework": __version__, "python": platform.python_version()}
    if info is not None:
        found[info.distribution or family] = info.version
    for dist in ("numpy", "pillow", "pyarrow"):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def result_schema(
    spec_json: str, pixels: str, passthrough: pa.Schema | None = None, modality_names: tuple[str, ...] = ("image",)
) -> pa.Schema:
    """The schema of results for ``spec_json`` in ``pixels`` mode, passthrough columns first,
    for requests of these modalities' items."""
    check_pixels(pixels)
    fields = list(passthrough or [])
    fields += _CORE
    meta: dict[str, str] = {
        "schema_version": SCHEMA_VERSION,
        "spec": spec_json,
        "pixels": pixels,
        "versions": json.dumps(versions(json.loads(spec_json)["family"]), sort_keys=True),
    }
    if pixels != "none":
        fields += [
            pa.field("pixel_values", list_of(_PIXELS[pixels], large=True)),
            pa.field("pixel_values_shape", list_of(list_of(pa.int64()))),
        ]
    if pixels == "f32":
        shape = family_shape(spec_json, modality_names)
        fields += _aux_fields(shape)
        meta["feature_dtype"] = shape.feature_dtype
        meta["aux"] = json.dumps({k: {"dtype": d, "shape": list(s)} for k, (d, s) in shape.aux.items()})
    fields += _ERRORS
    names = [f.name for f in fields]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise InvalidInputError(f"input column(s) {clash} clash with result columns; rename them")
    encoded = {(META + k).encode(): v.encode() for k, v in meta.items()}
    return pa.schema(fields, metadata={**encoded, b"pandas": _PANDAS.encode()})


def metadata(schema: pa.Schema) -> dict[str, str]:
    """The ``mm_framework.*`` metadata of a result schema, keys without the prefix."""
    raw = schema.metadata or {}
    return {k.decode()[len(META):]: v.decode() for k, v in raw.items() if k.decode().startswith(META)}


def spec_of(meta: Mapping[str, str], spec: Any) -> str:
    """The spec JSON to rebuild features with: ``spec`` (dict, JSON or pipeline) if given,
    else the one recorded in the table's metadata."""
    if spec is None:
        if "spec" not in meta:
            raise InvalidInputError("this row carries no spec metadata: pass spec= (a dict, JSON or Pipeline)")
        return meta["spec"]
    if hasattr(spec, "spec"):
        spec = spec.spec
    return spec if isinstance(spec, str) else json.dumps(spec, sort_keys=True)
