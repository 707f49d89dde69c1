"""process_table against Pipeline.process, byte for byte, for every bundled family and
pixel mode, through a Parquet file read back with plain pyarrow."""

from __future__ import annotations

import base64

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import mm_framework as mmf  # noqa: E402
from mm_framework import par  # noqa: E402
from mm_framework.arrow import model_kwargs, pixel_values, process_table  # noqa: E402
from mm_framework.arrow.process import feature_f32  # noqa: E402

from .batch_cases import FAMILIES, IMAGES, family_case  # noqa: E402


def _requests(ph: int) -> tuple[pa.Table, list[tuple[list[bytes], list[int]]]]:
    good = [([IMAGES[0]], [1, ph, 2]), ([IMAGES[1], IMAGES[2]], [ph, 5, ph]), ([IMAGES[2]], [ph])]
    rows = [*good, ([b"not an image"], [ph]), ([IMAGES[0]], [1, 2])]
    table = pa.table({
        "id": [f"r{k}" for k in range(len(rows))],
        "images": [imgs for imgs, _ in rows],
        "input_ids": [ids for _, ids in rows],
    })
    return table, good


def _roundtrip(table: pa.Table, tmp_path) -> pa.Table:
    path = tmp_path / "part.parquet"
    pq.write_table(table, path, compression="none")
    back = pq.read_table(path)
    assert back.schema.equals(table.schema, check_metadata=True)
    return back


def _assert_row_matches(row: pa.Table, out: mmf.Output, pixels: str) -> None:
    got = row.drop_columns([c for c in ("pixel_values",) if c in row.column_names]).to_pylist()[0]
    assert got["error"] is None and got["error_type"] is None
    assert got["input_ids"] == out.input_ids.tolist() and got["num_tokens"] == len(out.input_ids)
    assert got["mm_hashes"] == [it.hash for it in out.items]
    assert got["mm_offsets"] == [list(o) for o in out.offsets]
    assert got["mm_sizes"] == [list(it.size) for it in out.items]
    sizes = [None if it.processed_size is None else list(it.processed_size) for it in out.items]
    assert got["mm_processed_sizes"] == sizes
    if isinstance(out.positions, mmf.MRope):
        assert got["mrope_positions"] == out.positions.positions.reshape(-1).tolist()
        assert got["mrope_delta"] == out.positions.delta
    else:
        assert got["mrope_positions"] is None and got["mrope_delta"] is None
    if pixels == "none":
        assert "pixel_values" not in row.column_names
        return
    for have, it in zip(pixel_values(row), out.items, strict=True):
        want = feature_f32(it.feature.array, it.feature.dtype)
        assert have.dtype == np.float32 and have.shape == want.shape and have.tobytes() == want.tobytes()
    want_kwargs, have_kwargs = out.model_kwargs(), model_kwargs(row)
    assert sorted(have_kwargs) == sorted(want_kwargs)
    for name, want in want_kwargs.items():
        assert have_kwargs[name].dtype == want.dtype and have_kwargs[name].tobytes() == want.tobytes(), name
    if pixels == "f32":
        assert got["pixel_values_shape"] == [list(it.feature.shape) for it in out.items]
        for name in out.items[0].aux:
            assert got[name] == [it.aux[name].array.reshape(-1).tolist() for it in out.items]


def _unsupported(pipe: mmf.Pipeline, pixels: str) -> bool:
    return pixels == "u8" and not pipe.stores_pixels


@pytest.mark.parametrize("pixels", ["f32", "u8", "none"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_rows_equal_direct_processing(family, pixels, tmp_path):
    spec, ph = family_case(family)
    pipe = mmf.pipeline_from_spec(spec)
    table, good = _requests(ph)
    if _unsupported(pipe, pixels):
        with pytest.raises(mmf.UnsupportedError, match=f"family '{family}' does not implement"):
            process_table(pipe, table, pixels=pixels)
        return
    result = _roundtrip(process_table(pipe, table, pixels=pixels), tmp_path)
    assert result.column("id").to_pylist() == table.column("id").to_pylist()
    for k, (images, ids) in enumerate(good):
        _assert_row_matches(result.slice(k, 1), pipe.process(mmf.MmInput(images=images, input_ids=ids)), pixels)
    errors = result.select(["error_type", "error"]).to_pylist()[len(good):]
    assert errors[0]["error_type"] == "MediaError" and errors[0]["error"].startswith("item 0: ")
    assert errors[1]["error_type"] == "LayoutError" and "placeholder" in errors[1]["error"]
    for name in result.column_names:
        if name not in ("id", "error_type", "error"):
            assert result.column(name).slice(len(good)).null_count == 2, name
    if pixels != "none":
        assert result.schema.field("pixel_values").type.value_type == (pa.float32() if pixels == "f32" else pa.uint8())


def test_u8_storage_is_smaller_and_token_count_equal(tmp_path):
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    table, _ = _requests(ph)
    tables = {mode: process_table(pipe, table, pixels=mode) for mode in ("f32", "u8", "none")}
    f32, u8 = (tables[m].column("pixel_values").combine_chunks().values for m in ("f32", "u8"))
    # Qwen repeats a still image in both temporal slots: 2 floats per stored byte, 8x the bytes.
    assert len(f32) == 2 * len(u8) and f32.nbytes == 8 * u8.nbytes
    for mode in ("u8", "none"):
        for name in ("input_ids", "mm_offsets", "mm_hashes", "mrope_positions", "mrope_delta", "error_type"):
            assert tables[mode].column(name).equals(tables["f32"].column(name)), (mode, name)


def test_token_count_reads_headers_only():
    """A JPEG cut after its header: no pixels to decode, yet a full token count."""
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    cut = IMAGES[1][: len(IMAGES[1]) // 2]
    table = pa.table({"images": [[cut]], "input_ids": [[ph]]})
    assert process_table(pipe, table, pixels="f32").column("error_type").to_pylist() == ["MediaError"]
    counted = process_table(pipe, table, pixels="none").to_pylist()[0]
    assert counted["error"] is None and counted["mm_sizes"] == [[50, 90]]
    assert counted["num_tokens"] == pipe.num_media_tokens(50, 90)


def test_bad_rows_are_error_rows_and_passthrough_is_kept():
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec, limits=mmf.Limits(max_items=2))
    b64 = base64.b64encode(IMAGES[0]).decode()
    rows = [
        (None, [ph], None, "InvalidInputError"),  # no images
        (["/no/such/file.png"], [ph], None, "FetchError"),
        ([b64], None, "a text prompt", "InvalidInputError"),  # text but no tokenizer
        ([b64], [-5, ph], None, "InvalidInputError"),  # outside the id range
        ([b64] * 3, [ph] * 3, None, "LimitExceededError"),
        ([b64], None, None, None),  # no prompt at all: the default, one placeholder per image
        (["not-base64!"], [ph], None, "MediaError"),
        ([b64], [ph], None, None),
    ]
    table = pa.table({
        "id": list(range(len(rows))),
        "label": [f"l{k}" for k in range(len(rows))],
        "images": [r[0] for r in rows],
        "input_ids": [r[1] for r in rows],
        "text": [r[2] for r in rows],
    })
    result = process_table(pipe, table)
    assert result.column_names[:2] == ["id", "label"] and result.column("label").equals(table.column("label"))
    assert result.column("error_type").to_pylist() == [r[3] for r in rows], result.column("error").to_pylist()
    assert result.column("num_tokens").null_count == len(rows) - 2
    assert result.column("input_ids")[5] == result.column("input_ids")[7]


def test_pandas_keeps_nullable_integer_columns_integers():
    pytest.importorskip("pandas")
    spec, ph = family_case("qwen_vl")
    table = pa.table({"images": [[IMAGES[0]], [b"junk"]], "input_ids": [[ph], [ph]]})
    frame = process_table(mmf.pipeline_from_spec(spec), table, pixels="none").to_pandas()
    assert str(frame["num_tokens"].dtype) == "Int64" and frame["num_tokens"].isna().tolist() == [False, True]
    assert str(frame["mrope_delta"].dtype) == "Int64"
    spec, ph = family_case("intern_vl")  # 1-D positions: mrope_delta is null in every row
    frame = process_table(mmf.pipeline_from_spec(spec), table, pixels="none").to_pandas()
    assert str(frame["mrope_delta"].dtype) == "Int64" and frame["mrope_delta"].isna().all()


def test_a_lone_source_per_row_is_one_image():
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    table = pa.table({"images": pa.array([IMAGES[0], IMAGES[1]], pa.binary()), "input_ids": [[ph], [ph]]})
    result = process_table(pipe, table)
    assert result.column("mm_hashes").to_pylist() == [[mmf.content_hash(IMAGES[0])], [mmf.content_hash(IMAGES[1])]]


def test_text_rows_use_the_tokenizer():
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    table = pa.table({"images": [[IMAGES[0]]], "text": ["<img> hi"]})
    result = process_table(pipe, table, tokenize=lambda text: [ph, 7] if text.startswith("<img>") else [])
    want = pipe.process(mmf.MmInput(images=[IMAGES[0]], input_ids=[ph, 7]))
    assert result.column("input_ids").to_pylist() == [want.input_ids.tolist()]


def test_schema_is_fixed_whatever_the_rows(tmp_path):
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    ok = process_table(pipe, pa.table({"id": ["a"], "images": [[IMAGES[0]]], "input_ids": [[ph]]}))
    bad = process_table(pipe, pa.table({"id": ["b"], "images": [[b"junk"]], "input_ids": [[ph]]}))
    empty = process_table(pipe, pa.table({
        "id": pa.array([], pa.string()), "images": pa.array([], pa.list_(pa.binary())),
        "input_ids": pa.array([], pa.list_(pa.int64())),
    }))
    assert ok.schema.equals(bad.schema, check_metadata=True) and ok.schema.equals(empty.schema, check_metadata=True)
    for k, t in enumerate((ok, bad, empty)):
        pq.write_table(t, tmp_path / f"part-{k}.parquet")
    assert pq.read_table(tmp_path).num_rows == 2


def test_passthrough_clash_is_refused():
    spec, ph = family_case("qwen_vl")
    table = pa.table({"images": [[IMAGES[0]]], "input_ids": [[ph]], "num_tokens": [3]})
    with pytest.raises(mmf.InvalidInputError, match="num_tokens"):
        process_table(mmf.pipeline_from_spec(spec), table)


@pytest.fixture
def _restore_threads():
    yield
    par.set_threads(None)


@pytest.mark.usefixtures("_restore_threads")
def test_same_table_inline_and_threaded():
    spec, ph = family_case("qwen_vl")
    pipe = mmf.pipeline_from_spec(spec)
    table, _ = _requests(ph)
    tables = []
    for mode in ("inline", 2):
        par.set_threads(mode)
        tables.append(process_table(pipe, table))
    assert tables[0].equals(tables[1], check_metadata=True)
