"""pixel_values / model_kwargs from every row form, the metadata, and what they refuse."""

from __future__ import annotations

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import mm_framework as mmf  # noqa: E402
from mm_framework.arrow import SCHEMA_VERSION, metadata, model_kwargs, pixel_values, process_table  # noqa: E402

from .batch_cases import IMAGES, family_case  # noqa: E402


@pytest.fixture(scope="module")
def qwen():
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    table = pa.table(
        {"id": ["a", "b"], "images": [[IMAGES[0], IMAGES[1]], [b"junk"]], "input_ids": [[ph, 3, ph], [ph]]}
    )
    want = pipe.process(mmf.MmInput(images=[IMAGES[0], IMAGES[1]], input_ids=[ph, 3, ph]))
    return spec, {mode: process_table(pipe, table, pixels=mode) for mode in ("f32", "u8", "none")}, want


def _same(arrays, want):
    assert [a.tobytes() for a in arrays] == [it.feature.array.tobytes() for it in want.items]


@pytest.mark.parametrize("mode", ["f32", "u8"])
def test_every_row_form_gives_the_exact_features(qwen, mode):
    spec, tables, want = qwen
    table = tables[mode]
    _same(pixel_values(table.slice(0, 1)), want)
    _same(pixel_values(table.to_batches()[0].slice(0, 1)), want)
    _same(pixel_values(table.to_pylist()[0], spec=spec), want)
    numpy_row = {k: np.asarray(v[0]) if k == "pixel_values" else v[0] for k, v in table.slice(0, 1).to_pydict().items()}
    _same(pixel_values(numpy_row, spec=mmf.pipeline_from_spec(spec)), want)
    kwargs = model_kwargs(table.slice(0, 1))
    assert all(kwargs[k].tobytes() == v.tobytes() for k, v in want.model_kwargs().items())


def test_u8_rows_need_the_spec_without_metadata(qwen):
    _, tables, _ = qwen
    with pytest.raises(mmf.InvalidInputError, match="pass spec="):
        pixel_values(tables["u8"].to_pylist()[0])
    # float32 rows need nothing to give their values back
    assert len(pixel_values(tables["f32"].to_pylist()[0])) == 2


def test_model_kwargs_of_a_mapping_row_needs_the_spec_and_says_so(qwen):
    spec, tables, want = qwen
    row = tables["f32"].to_pylist()[0]
    with pytest.raises(mmf.InvalidInputError, match=r"no schema metadata naming it \(a mapping such as a to_pylist"):
        model_kwargs(row)
    for given in (spec, metadata(tables["f32"].schema)["spec"]):  # the docs' way: the table's own spec
        kwargs = model_kwargs(row, spec=given)
        assert all(kwargs[k].tobytes() == v.tobytes() for k, v in want.model_kwargs().items())


def test_refusals_say_why(qwen):
    spec, tables, _ = qwen
    with pytest.raises(mmf.InvalidInputError, match=r"error row has no pixels \(MediaError: item 0"):
        pixel_values(tables["f32"].slice(1, 1))
    with pytest.raises(mmf.InvalidInputError, match="no pixel_values column"):
        pixel_values(tables["none"].slice(0, 1))
    with pytest.raises(mmf.InvalidInputError, match="expected one row, got 2"):
        pixel_values(tables["f32"])
    with pytest.raises(mmf.InvalidInputError, match="outside 0..255"):
        pixel_values({**tables["u8"].to_pylist()[0], "pixel_values": [300]}, spec=spec)
    row = tables["u8"].to_pylist()[0]
    with pytest.raises(mmf.InvalidInputError, match="need"):
        pixel_values({**row, "pixel_values": row["pixel_values"][:-1]}, spec=spec)
    with pytest.raises(mmf.InvalidInputError, match="not multiples of the factor"):
        pixel_values({**row, "pixel_values": [0] * 30, "pixel_values_shape": [[2, 5, 3]]}, spec=spec)


def test_metadata_names_spec_mode_versions(qwen):
    spec, tables, _ = qwen
    for mode, table in tables.items():
        meta = metadata(table.schema)
        assert meta["schema_version"] == SCHEMA_VERSION and meta["pixels"] == mode
        assert json.loads(meta["spec"]) == spec
        versions = json.loads(meta["versions"])
        assert {"mm_framework", "mm-framework-qwen-vl", "numpy", "pillow", "pyarrow", "python"} <= set(versions)
    assert json.loads(metadata(tables["f32"].schema)["aux"]) == {"image_grid_thw": {"dtype": "i64", "shape": [3]}}
    assert metadata(tables["f32"].schema)["feature_dtype"] == "f32"
    assert tables["f32"].schema.field("image_grid_thw").type == pa.list_(
        pa.field("element", pa.list_(pa.field("element", pa.int64()), 3))
    )


def test_bf16_features_round_trip_through_float32():
    spec, ph = family_case("inkling")
    pipe = mmf.pipeline_from_spec(spec)
    table = process_table(pipe, pa.table({"images": [[IMAGES[2]]], "input_ids": [[ph]]}))
    want = pipe.process(mmf.MmInput(images=[IMAGES[2]], input_ids=[ph]))
    assert metadata(table.schema)["feature_dtype"] == "bf16"
    kwargs = model_kwargs(table.to_pylist()[0], spec=spec)
    for name, value in want.model_kwargs().items():
        assert kwargs[name].dtype == value.dtype and kwargs[name].tobytes() == value.tobytes(), name
