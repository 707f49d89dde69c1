"""An error about one item names that item's source (``item 1 (cat.png): ...``): in the
Python API, on the command line and in batch error rows; inline data has no name."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.cli import main
from mm_framework.media.policy import source_label

from .conftest import png_bytes

NOT_AN_IMAGE = b"just some text\n"


@pytest.mark.parametrize("source, label", [
    (Path("photos/cat.png"), "cat.png"),
    ("/data/shard 3/img_00123.jpg", "img_00123.jpg"),
    ("file:///data/x/dog.webp", "dog.webp"),
    ("https://user:secret@cdn.example.com/a/b.jpg?X-Amz-Signature=abc#frag", "https://cdn.example.com/a/b.jpg?..."),
    ("http://example.com/pic.png", "http://example.com/pic.png"),
    ("data:image/png;base64," + "A" * 5000, "data:image/png;base64,..."),
    ("data:image/png;base64" + "A" * 5000, "data:image/png;..."),
    ("data:" + "A" * 5000, "data:..."),
    ("iVBORw0KGgo" + "A" * 100, None),
    (b"\x89PNG", None),
    (np.zeros((2, 2, 3), np.uint8), None),
])
def test_source_labels(source, label):
    assert source_label(source) == label


def test_long_names_keep_both_ends():
    label = source_label("/d/" + "n" * 200 + "-tail.png")
    assert len(label) == 80 and label.startswith("nnn") and label.endswith("n-tail.png") and "..." in label
    url = source_label("https://example.com/" + "p" * 300 + "/last.jpg")
    assert len(url) == 80 and url.startswith("https://example.com/") and url.endswith("/last.jpg")


def test_the_error_message_and_attributes(toy_pipe, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_bytes(NOT_AN_IMAGE)
    inp = mmf.MmInput(images=[png_bytes(4, 4), bad], input_ids=[1, 1])
    for call in (toy_pipe.process, toy_pipe.count_tokens, lambda i: asyncio.run(toy_pipe.process_async(i))):
        with pytest.raises(mmf.MediaError) as e:
            call(inp)
        assert str(e.value) == "item 1 (notes.txt): image decode: cannot identify image file"
        assert (e.value.item, e.value.source) == (1, "notes.txt")
        assert e.value.cause == "image decode: cannot identify image file"
    [got] = toy_pipe.process_many([inp], return_exceptions=True)
    assert str(got) == "item 1 (notes.txt): image decode: cannot identify image file"


def test_inline_data_and_request_errors_have_no_name(toy_pipe, tmp_path):
    with pytest.raises(mmf.MediaError) as e:
        toy_pipe.process(mmf.MmInput(images=[png_bytes(4, 4), NOT_AN_IMAGE], input_ids=[1, 1]))
    assert str(e.value) == "item 1: image decode: cannot identify image file" and e.value.source is None
    good = tmp_path / "a.png"
    good.write_bytes(png_bytes(4, 4))
    with pytest.raises(mmf.LayoutError) as e:
        toy_pipe.process(mmf.MmInput(images=[good], input_ids=[1, 1]))
    assert e.value.item is None and e.value.source is None and not str(e.value).startswith("item")


def test_from_source_keeps_a_name_and_needs_an_item():
    err = mmf.MediaError("image decode: x", item=2)
    named = err.from_source("a.png")
    assert str(named) == "item 2 (a.png): image decode: x" and named.from_source("b.png") is named
    assert named.at_item(5) is named
    assert mmf.MediaError("x").from_source("a.png").source is None


def test_the_cli_names_the_file(toy, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("ok.png").write_bytes(png_bytes(4, 4))
    Path("notes.txt").write_bytes(NOT_AN_IMAGE)
    assert main(["process", "--spec", "toy_default", "ok.png", "notes.txt", "--input-ids", "1,1"]) == 2
    err = capsys.readouterr().err
    assert err == "error: MediaError: item 1 (notes.txt): image decode: cannot identify image file\n"


def test_the_cli_says_a_clip_goes_in_with_video(tmp_path, capsys):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41" + bytes(64))
    assert main(["process", "--spec", "qwen2_vl", str(clip)]) == 2
    assert capsys.readouterr().err == (
        "error: MediaError: item 0 (clip.mp4): image decode: not an image but a video (MP4): pass it with --video\n")


def test_batch_error_rows_name_the_file(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "ok.png").write_bytes(png_bytes(28, 28))
    (tmp_path / "notes.txt").write_bytes(NOT_AN_IMAGE)
    manifest = tmp_path / "m.jsonl"
    rows = [{"id": "a", "image": str(tmp_path / "ok.png")}, {"id": "b", "image": str(tmp_path / "notes.txt")}]
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    assert main(["batch", str(manifest), "--spec", "qwen2_vl", "--out", str(out), "--workers", "1"]) == 0
    errors = pq.read_table(out, columns=["id", "error"]).to_pylist()
    assert errors == [{"id": "a", "error": None},
                      {"id": "b", "error": "item 0 (notes.txt): image decode: cannot identify image file"}]
