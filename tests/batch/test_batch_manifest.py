"""Manifests: JSONL lines (good and bad), directories and globs, in a fixed order."""

from __future__ import annotations

import json
import os

import pytest

import mm_framework as mmf
from mm_framework.batch.manifest import Entry, default_prompt, fingerprint, read_manifest


def test_jsonl_lines_become_entries(tmp_path):
    lines = [
        {"id": "a", "image": "img/a.png"},
        {"id": 7, "images": ["b.png", "https://example.com/c.jpg", "data:image/png;base64,AAAA"], "input_ids": [1, 2]},
        {"image": "/abs/d.png", "text": "hello"},
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    entries = read_manifest(str(path))
    assert entries == [
        Entry("a", (str(tmp_path / "img" / "a.png"),)),
        Entry("7", (str(tmp_path / "b.png"), "https://example.com/c.jpg", "data:image/png;base64,AAAA"), (1, 2)),
        Entry("line 3", ("/abs/d.png",), text="hello"),
    ]


@pytest.mark.parametrize(
    "line, problem",
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"image": "a.png", "label": 3}', "unknown key(s) ['label']"),
        ('{"image": "a.png", "images": ["b.png"]}', "not both"),
        ('{"images": []}', "non-empty list of strings"),
        ('{"images": [3]}', "non-empty list of strings"),
        ('{"id": "x"}', "no media: give 'image'/'images', 'video'/'videos' or 'audio'/'audios'"),
        ('{"video": "a.mp4", "videos": ["b.mp4"]}', "give 'video' or 'videos', not both"),
        ('{"audios": []}', "'audios' must be a non-empty list of strings (or 'audio' one string)"),
        ('{"audio": 3}', "'audios' must be a non-empty list of strings"),
        ('{"image": "a.png", "input_ids": [1, "2"]}', "'input_ids' must be a list of integers"),
        ('{"image": "a.png", "text": 5}', "'text' must be a string"),
        ('{"image": "a.png", "id": [1]}', "'id' must be a string or an integer"),
    ],
)
def test_a_bad_line_is_an_entry_with_its_problem(tmp_path, line, problem):
    path = tmp_path / "m.jsonl"
    path.write_text('{"id": "ok", "image": "a.png"}\n' + line + "\n")
    ok, bad = read_manifest(str(path))
    assert ok.problem is None
    assert bad.problem.startswith("manifest line 2: ") and problem in bad.problem


def test_directory_and_glob_take_image_files_in_sorted_order(tmp_path):
    for name in ["b.png", "a.JPG", "sub/c.webp", "notes.txt", ".hidden.png", "sub/d.gif"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    entries = read_manifest(str(tmp_path))
    assert [e.id for e in entries] == ["a.JPG", "b.png", "sub/c.webp", "sub/d.gif"]
    assert entries[0].images == (str(tmp_path / "a.JPG"),)
    globbed = read_manifest(os.path.join(str(tmp_path), "**", "*.png"))
    assert [e.images for e in globbed] == [(str(tmp_path / "b.png"),)]


def test_lines_with_videos_and_audios(tmp_path):
    lines = [{"video": "v.mp4", "audios": ["a.wav", "data:audio/wav;base64,UklG"]},
             {"id": "mix", "images": ["p.png"], "videos": ["/abs/w.webm"], "audio": "b.flac", "text": "hi"}]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    one, mix = read_manifest(str(path))
    assert one == Entry("line 1", videos=(str(tmp_path / "v.mp4"),),
                        audios=(str(tmp_path / "a.wav"), "data:audio/wav;base64,UklG"))
    assert not one.images_only and one.items == 3
    assert mix == Entry("mix", (str(tmp_path / "p.png"),), text="hi", videos=("/abs/w.webm",),
                        audios=(str(tmp_path / "b.flac"),))


def test_a_directory_gives_each_media_file_its_modality(tmp_path):
    for name in ["a.png", "b.MP4", "c.wav", "d.flac", "e.txt", "sub/f.mp3", "sub/g.webm"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    entries = {e.id: e for e in read_manifest(str(tmp_path))}
    assert list(entries) == ["a.png", "b.MP4", "c.wav", "d.flac", "sub/f.mp3", "sub/g.webm"]
    assert entries["b.MP4"].videos == (str(tmp_path / "b.MP4"),) and not entries["b.MP4"].images
    assert entries["sub/f.mp3"].audios == (str(tmp_path / "sub" / "f.mp3"),)


def test_unreadable_manifests_fail_the_run(tmp_path):
    with pytest.raises(mmf.InvalidInputError, match="neither a file, a directory nor a glob"):
        read_manifest(str(tmp_path / "missing.jsonl"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(mmf.InvalidInputError, match="no image, video or audio files"):
        read_manifest(str(tmp_path / "empty"))
    (tmp_path / "latin1.jsonl").write_bytes(b"\xff\xfe{")
    with pytest.raises(mmf.InvalidInputError, match="latin1.jsonl"):
        read_manifest(str(tmp_path / "latin1.jsonl"))


def test_fingerprint_and_default_prompt():
    a, b = Entry("a", ("/x.png",)), Entry("b", ("/y.png",))
    assert fingerprint([a, b]) == fingerprint([a, b]) != fingerprint([b, a])
    assert default_prompt("f", {"image": 9}, None) == (9,)
    assert default_prompt("f", {"image": 9}, [1, 2]) == (1, 2)
    with pytest.raises(mmf.InvalidInputError, match="family 'f' names no image placeholder .*give input_ids"):
        default_prompt("f", {"video": 3}, None)
