"""``mm-framework batch`` end to end: a directory with corrupt images, a run killed and
resumed, progress only on a TTY, JSONL manifests, and the refusals."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("tqdm")

from mm_framework.cli import main  # noqa: E402
from mm_framework.testing import sample_image  # noqa: E402

from .batch_cases import family_case  # noqa: E402

CORRUPT = {"013.jpg": b"not an image", "076.png": b"", "151.jpg": sample_image(160, 120, "JPEG", 151)[:400]}


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """200 images, 3 of them corrupt (garbage, empty, a JPEG cut after its header)."""
    root = tmp_path_factory.mktemp("images")
    for k in range(200):
        name = f"{k:03d}.{'jpg' if k % 2 else 'png'}"
        data = CORRUPT[name] if name in CORRUPT else sample_image(160, 120, "JPEG" if k % 2 else "PNG", k)
        (root / name).write_bytes(data)
    return root


@pytest.fixture(scope="module")
def reference(images, tmp_path_factory):
    """One uninterrupted run on two worker processes."""
    out = tmp_path_factory.mktemp("reference") / "out"
    args = ["batch", str(images), "--spec", "qwen2_vl", "--out", str(out), "--shard-size", "25", "--workers", "2"]
    assert main(args) == 0
    return out


def _cli(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "mm_framework", *args], start_new_session=True, **kwargs)


def test_directory_run_has_one_error_row_per_corrupt_image(reference):
    table = pq.read_table(reference)
    assert table.num_rows == 200
    assert table.column("id").to_pylist() == [f"{k:03d}.{'jpg' if k % 2 else 'png'}" for k in range(200)]
    errors = table.filter(pa.compute.is_valid(table.column("error")))
    assert sorted(errors.column("id").to_pylist()) == sorted(CORRUPT)
    assert set(errors.column("error_type").to_pylist()) == {"MediaError"}
    assert sorted(os.listdir(reference)) == ["_batch.json"] + [f"part-{k:05d}.parquet" for k in range(8)]


def test_killed_run_resumes_to_the_same_rows(images, reference, tmp_path):
    out = tmp_path / "out"
    args = ["batch", str(images), "--spec", "qwen2_vl", "--out", str(out), "--shard-size", "10", "--workers", "1"]
    first = _cli(*args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (out / "part-00000.parquet").exists():
            assert first.poll() is None and time.monotonic() < deadline, "the run ended before writing a shard"
            time.sleep(0.005)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    done = [n for n in os.listdir(out) if n.startswith("part-")]
    assert 1 <= len(done) < 20, done
    resumed = _cli(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, stderr
    assert stderr == ""  # no progress bar off a TTY
    assert f"{len(done)} finished shard(s) skipped" in stdout
    assert 'errors: 3 (MediaError 3)\nfailed: "013.jpg", "076.png", "151.jpg"\n' in stdout
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]
    assert pq.read_table(out).equals(pq.read_table(reference), check_metadata=True)


def test_progress_bar_on_a_tty(images, tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("".join(json.dumps({"image": str(images / f"{k:03d}.png")}) + "\n" for k in range(0, 8, 2)))
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # tqdm fits its bar to the width
    proc = _cli("batch", str(manifest), "--spec", "qwen2_vl", "--out", str(tmp_path / "out"), "--workers", "1",
                stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    assert b"4/4" in seen and b"img/s" in seen and b"errors=0" in seen


def test_jsonl_manifest_rows_in_order_with_line_errors(images, tmp_path, capsys):
    ph = family_case("qwen_vl")[1]
    lines = [
        json.dumps({"id": "two", "images": ["000.png", "001.jpg"], "input_ids": [1, ph, 2, ph]}),
        "{broken",
        json.dumps({"id": "missing", "image": "no-such.png"}),
        json.dumps({"image": "002.png"}),
    ]
    manifest = images / "manifest.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["batch", str(manifest), "--spec", "qwen2_vl", "--out", str(out), "--workers", "1"]) == 0
    assert "errors: 2 (FetchError 1, InvalidInputError 1)" in capsys.readouterr().out
    rows = pq.read_table(out, columns=["id", "num_tokens", "error_type", "error"]).to_pylist()
    assert [r["id"] for r in rows] == ["two", "line 2", "missing", "line 4"]
    assert [r["error_type"] for r in rows] == [None, "InvalidInputError", "FetchError", None]
    assert rows[1]["error"].startswith("manifest line 2: invalid JSON")
    assert rows[0]["num_tokens"] == 4 + 2 * 24 - 2 and rows[3]["num_tokens"] == 24


def test_rows_of_videos_and_audios(images, tmp_path, capsys):
    """Video and audio rows: the family's default prompt per item, the same rows as the
    Python API; a one-image --input-ids does not stand for them."""
    import numpy as np

    import mm_framework as mmf
    from mm_framework.arrow import model_kwargs

    from ..media.audio_helpers import wav
    from ..test_driver_video import encode_clip

    if "qwen2_audio" not in mmf.list_presets():
        pytest.skip("the qwen2_audio family is not installed")
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(encode_clip(np.random.default_rng(5).integers(0, 256, (4, 56, 84, 3), dtype=np.uint8)))
    sound = tmp_path / "tone.wav"
    sound.write_bytes(wav(1.5, 22050, 2))
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"id": "v", "video": str(clip)}) + "\n"
                        + json.dumps({"id": "iv", "images": [str(images / "000.png")], "videos": [str(clip)]}) + "\n")
    out = tmp_path / "video"
    assert main(["batch", str(manifest), "--spec", "qwen2_vl", "--out", str(out), "--workers", "1"]) == 0
    assert "requests: 2 (1 image, 2 videos)" in capsys.readouterr().out
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    table = pq.read_table(out)
    for k, inp in enumerate([mmf.MmInput(videos=[clip]), mmf.MmInput(images=[images / "000.png"], videos=[clip])]):
        want = pipe.process(inp)
        row = table.slice(k, 1)
        assert row.column("input_ids").to_pylist()[0] == want.input_ids.tolist()
        got = model_kwargs(row)
        assert sorted(got) == sorted(want.model_kwargs())
        assert all(got[n].tobytes() == v.tobytes() for n, v in want.model_kwargs().items())
    out = tmp_path / "given"
    assert main(["batch", str(manifest), "--spec", "qwen2_vl", "--out", str(out), "--input-ids", "151655"]) == 0
    errors = pq.read_table(out, columns=["error"]).column("error").to_pylist()
    assert all("--input-ids is the prompt of one image" in e for e in errors)
    manifest.write_text(json.dumps({"id": "a", "audio": str(sound)}) + "\n")
    out = tmp_path / "audio"
    assert main(["batch", str(manifest), "--spec", "qwen2_audio", "--out", str(out), "--workers", "1"]) == 0
    summary = capsys.readouterr().out
    assert "requests: 1 (1 audio)" in summary and "errors: 0" in summary and "items/s" in summary
    apipe = mmf.pipeline_from_spec(mmf.preset("qwen2_audio"))
    want = apipe.process(mmf.MmInput(audios=[sound]))
    got = model_kwargs(pq.read_table(out).slice(0, 1))
    assert sorted(got) == sorted(want.model_kwargs())
    assert all(got[n].tobytes() == v.tobytes() for n, v in want.model_kwargs().items())


@pytest.fixture(scope="module")
def many_errors(images, tmp_path_factory):
    """A run of 13 broken manifest lines around 2 good ones (lines 1 and 8), and its summary."""
    good = {0: "000.png", 7: "002.png"}
    lines = [json.dumps({"image": good[k]}) if k in good else "{broken" for k in range(15)]
    manifest = images / "many_errors.jsonl"
    manifest.write_text("\n".join(lines) + "\n")
    out = tmp_path_factory.mktemp("many_errors") / "out"
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary):
        assert main(["batch", str(manifest), "--spec", "qwen2_vl", "--out", str(out), "--workers", "1"]) == 0
    return out, summary.getvalue()


def test_summary_names_the_first_ten_failed_ids(many_errors):
    _, stdout = many_errors
    failed = [f'"line {n}"' for n in range(2, 16) if n != 8][:10]
    assert f"errors: 13 (InvalidInputError 13)\nfailed: {', '.join(failed)} and 3 more\n" in stdout


def test_pandas_reads_num_tokens_as_integers(many_errors):
    pytest.importorskip("pandas")
    frame = pq.read_table(many_errors[0]).to_pandas()
    assert str(frame["num_tokens"].dtype) == "Int64" and str(frame["mrope_delta"].dtype) == "Int64"
    ok = frame["error_type"].isna()
    assert frame["num_tokens"][ok].tolist() == [24, 24] and frame["num_tokens"][~ok].isna().all()


@pytest.mark.parametrize(
    "change, differ",
    [
        (["--spec", "qwen3_vl"], "spec differs"), (["--pixels", "u8"], "pixel mode differs"),
        (["--shard-size", "5"], "shard size differs"),
        (["--spec", "qwen3_vl", "--pixels", "u8"], "pixel mode and spec differ"),
    ],
)
def test_rerun_with_other_arguments_is_refused(images, reference, capsys, change, differ):
    args = {"--spec": "qwen2_vl", "--shard-size": "25", **dict(zip(change[::2], change[1::2]))}
    assert main(["batch", str(images), "--out", str(reference), *[x for kv in args.items() for x in kv]]) == 2
    assert f"holds another run (its {differ})" in capsys.readouterr().err
    assert pq.read_table(reference, columns=["id"]).num_rows == 200


def test_refusals_exit_2_with_the_reason(images, tmp_path, capsys, monkeypatch):
    assert main(["batch", "/nonexistent/*.png", "--spec", "qwen2_vl", "--out", str(tmp_path)]) == 2
    assert "no image, video or audio files" in capsys.readouterr().err
    assert main(["batch", str(images), "--spec", "qwen2_vl", "--out", str(tmp_path), "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err
    (tmp_path / "part-00000.parquet").write_bytes(b"")
    assert main(["batch", str(images), "--spec", "qwen2_vl", "--out", str(tmp_path)]) == 2
    assert "holds shards but no _batch.json" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert main(["batch", str(images), "--spec", "qwen2_vl", "--out", str(tmp_path)]) == 2
    assert "needs tqdm: pip install 'mm-framework[batch]'" in capsys.readouterr().err


def test_a_prompt_the_family_rejects_fails_the_run(images, tmp_path, capsys):
    spec, boi = family_case("gemma3")
    out = tmp_path / "out"
    manifest = tmp_path / "m.jsonl"
    manifest.write_text(json.dumps({"image": str(images / "000.png")}) + "\n")
    assert main(["batch", str(manifest), "--spec", "gemma3_4b_it", "--out", str(out), "--input-ids", "1 2"]) == 2
    assert "does not fit family 'gemma3'" in capsys.readouterr().err and not out.exists()
    assert main(["batch", str(manifest), "--spec", "gemma3_4b_it", "--out", str(out), "--input-ids", str(boi)]) == 0
    assert pq.read_table(out).column("error").null_count == 1


def test_a_feature_cache_changes_no_row(images, reference, tmp_path):
    out = tmp_path / "cached"
    args = ["batch", str(images), "--spec", "qwen2_vl", "--out", str(out), "--shard-size", "25", "--workers", "1",
            "--cache-mb", "64"]
    assert main(args) == 0
    assert pq.read_table(out).equals(pq.read_table(reference))


def test_argument_refusals_are_typed_errors_as_in_every_command(images, tmp_path, capsys, monkeypatch):
    """The subcommand raises and only ``cli.main`` prints, so batch says ``<Class>: <reason>``
    like the other commands (docs/batch.md, "Exit status")."""
    run = ["batch", str(images), "--spec", "qwen2_vl", "--out", str(tmp_path)]
    for option, value, least in (("--cache-mb", "-1", 0), ("--workers", "0", 1), ("--shard-size", "0", 1)):
        assert main([*run, option, value]) == 2
        assert f"InvalidInputError: {option} must be at least {least}, got {value}" in capsys.readouterr().err
    assert main([*run, "--input-ids", "1,a"]) == 2
    assert "InvalidInputError: --input-ids must be integers" in capsys.readouterr().err
    assert main([*run[:3], "no-such-preset", *run[4:]]) == 2
    assert "SpecError: --spec 'no-such-preset' is neither a preset" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(run) == 2
    err = capsys.readouterr().err
    assert "UnsupportedError: mm-framework batch needs pyarrow: pip install 'mm-framework[batch]'" in err
    assert not any(tmp_path.iterdir())
