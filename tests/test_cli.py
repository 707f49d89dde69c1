"""The ``mm-framework`` command line, driven in-process (toy family and the bundled presets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework.cli import main
from mm_framework import content_hash
from mm_framework.kernels import native

from conftest import png_bytes


def test_process_prints_summary_and_writes_npz(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(8, 4))
    out = tmp_path / "out.npz"
    assert main(["process", "--spec", "toy_default", str(img), str(img), "--input-ids", "5,1,6,1", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "item 0: image " in text and "8x4 -> 8x4" in text and "Grid(t=1, h=1, w=2)" in text
    assert "tokens 2 at [1, 2]" in text and f"hash {content_hash(img.read_bytes()):#018x}" in text
    assert "positions: 1-D RoPE" in text and "layout: Text 0..0 | image 0: 1 x 2 at 1..2 | Text 3..3 | image 1" in text
    saved = np.load(out)
    assert saved["input_ids"].tolist() == [5, 1, 1, 6, 1, 1]
    assert saved["offsets"].tolist() == [[1, 2], [4, 5]]
    assert saved["item1_feature"].shape == (2, 3) and saved["item0_grid"].tolist() == [1, 1, 2]
    assert saved["hashes"].dtype == np.uint64


def test_out_gets_its_suffix_and_the_printed_path_is_the_written_one(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(8, 4))
    assert main(["process", "--spec", "toy_default", str(img), "--input-ids", "1", "--out", str(tmp_path / "o2")]) == 0
    assert f"wrote {tmp_path / 'o2.npz'}" in capsys.readouterr().out and (tmp_path / "o2.npz").is_file()


def test_out_into_a_missing_directory_fails_before_any_work(toy, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(mmf.Pipeline, "process", lambda *a, **k: pytest.fail("processed before checking --out"))
    assert main(["process", "--spec", "toy_default", "--out", str(tmp_path / "nope" / "o.npz")]) == 2
    assert "InvalidInputError: --out" in capsys.readouterr().err and "does not exist" not in ""


def test_large_output_needs_force(toy, tmp_path, capsys, monkeypatch):
    import mm_framework.cli as cli

    monkeypatch.setattr(cli, "LARGE_OUTPUT", 10)
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(8, 4))
    args = ["process", "--spec", "toy_default", str(img), "--input-ids", "1", "--out", str(tmp_path / "big.npz")]
    assert main(args) == 2
    assert "pass --force" in capsys.readouterr().err and not (tmp_path / "big.npz").exists()
    assert main(args + ["--force"]) == 0 and (tmp_path / "big.npz").exists()


def test_json_summary_is_machine_readable(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(8, 4))
    assert main(["process", "--spec", "toy_default", str(img), "--input-ids", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tokens"] == 2 and doc["items"][0]["size"] == [8, 4] and doc["items"][0]["source"] == str(img)
    assert doc["spec"] == {"family": "toy", "image_token_id": 1}


def test_default_prompt_uses_the_family_placeholder(tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(64, 48))
    assert main(["process", "--spec", '{"family": "inkling"}', str(img)]) == 0
    out = capsys.readouterr().out
    assert '"image_token_id": -101' in out and '"patch_size": 40' in out  # the resolved spec, not as typed


def test_family_without_placeholder_asks_for_ids(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(4, 4))
    assert main(["process", "--spec", '{"family": "toy", "image_token_id": 3}', str(img)]) == 2
    assert "InvalidInputError: --input-ids is required: family 'toy' names no image placeholder" in capsys.readouterr().err


def test_errors_exit_2_with_the_typed_message(toy, tmp_path, capsys):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    assert main(["process", "--spec", "toy_default", str(bad), "--input-ids", "1"]) == 2
    assert "MediaError: item 0 (bad.png): image decode" in capsys.readouterr().err
    assert main(["process", "--spec", "no-such-preset"]) == 2
    assert "neither a preset" in capsys.readouterr().err
    assert main(["process", "--spec", "toy_default", "--input-ids", "1,a"]) == 2
    assert "InvalidInputError: --input-ids must be integers" in capsys.readouterr().err
    tiff = tmp_path / "t.tif"
    Image.new("RGB", (4, 4)).save(tiff)
    assert main(["process", "--spec", "toy_default", str(tiff), "--input-ids", "1"]) == 2
    assert "unsupported format TIFF" in capsys.readouterr().err


def test_tokens_names_the_bad_side(capsys):
    assert main(["tokens", "0", "10"]) == 2
    assert "image width must be greater than zero, got 0" in capsys.readouterr().err
    assert main(["tokens", "10", "0"]) == 2
    assert "image height must be greater than zero, got 0" in capsys.readouterr().err


def test_model_directory_as_spec(tmp_path, capsys):
    models = os.path.join(os.path.dirname(__file__), "..", "qwen_vl_plugin", "tests", "golden", "models", "qwen2_5_vl_instruct")
    assert main(["tokens", "640", "480", "--spec", models]) == 0
    assert int(capsys.readouterr().out) == mmf.pipeline_from_spec(mmf.preset("qwen2_5_vl")).num_media_tokens(640, 480)


def test_a_spec_that_would_allocate_too_much_is_refused(capsys):
    spec = json.dumps({**mmf.preset("qwen2_vl_class_defaults"), "min_pixels": 10**8, "max_pixels": 10**8})
    big = mmf.pipeline_from_spec(spec, limits=mmf.Limits(max_processed_pixels=10**7))
    with pytest.raises(mmf.LimitExceededError, match="above Limits.max_processed_pixels = 10000000"):
        big.num_media_tokens(640, 480)


def test_plugins_and_tokens(toy, capsys):
    assert main(["plugins"]) == 0
    text = capsys.readouterr().out
    assert "toy  (<in-process plugin toy-plugin>)" in text and "presets: toy_default" in text
    assert "hooks: mm_capabilities, mm_layout, mm_num_media_tokens, mm_plan_item, mm_positions, mm_process_item" in text
    assert main(["tokens", "--spec", "toy_default", "9", "13"]) == 0
    assert capsys.readouterr().out.strip() == "6"


def test_plugins_and_version_say_which_kernels_run(capsys, monkeypatch):
    for mode in ("portable",) + (("native",) if native.built() else ()):
        monkeypatch.setenv("MM_FRAMEWORK_KERNELS", mode)
        native.set_mode(None)
        want = f"kernels: native ({native.simd_level()})" if mode == "native" else "kernels: portable"
        assert main(["plugins"]) == 0
        assert capsys.readouterr().out.splitlines()[0] == want
        with pytest.raises(SystemExit):
            main(["--version"])
        assert capsys.readouterr().out.strip() == f"mm-framework 0.1.0; {want}"
    monkeypatch.setenv("MM_FRAMEWORK_KERNELS", "turbo")
    native.set_mode(None)
    assert main(["plugins"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("kernels: unavailable (MM_FRAMEWORK_KERNELS='turbo'")
    monkeypatch.undo()
    native.set_mode(None)


def _run(*args, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("MM_FRAMEWORK_")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "mm_framework", *args], capture_output=True, text=True, env=full,
                          timeout=120)


def test_bare_command_prints_help_and_help_is_plain_text():
    proc = _run()
    assert proc.returncode == 0 and "usage: mm-framework" in proc.stdout and "``" not in proc.stdout
    for command in ("process", "inspect", "tokens", "plugins"):
        assert "``" not in _run(command, "--help").stdout


def test_broken_pipe_ends_quietly():
    proc = subprocess.run(f"{sys.executable} -m mm_framework plugins | head -1", shell=True, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout.startswith("kernels:")


def test_a_filter_that_hides_every_family_says_so():
    proc = _run("plugins", env={"MM_FRAMEWORK_LOAD_PLUGINS": "qwen_vl_plugin"})
    assert "no families installed" in proc.stdout
    assert "qwen_vl (mm-framework-qwen-vl) is installed but hidden by MM_FRAMEWORK_LOAD_PLUGINS='qwen_vl_plugin'" in proc.stdout
    assert "MM_FRAMEWORK_LOAD_PLUGINS names 'qwen_vl_plugin', which is neither an installed plugin's entry-point" in proc.stdout
    proc = _run("tokens", "64", "64", env={"MM_FRAMEWORK_LOAD_PLUGINS": "qwen_vl_plugin"})
    assert proc.returncode == 2 and "hidden by MM_FRAMEWORK_LOAD_PLUGINS" in proc.stderr


def test_bad_environment_values_name_the_variable():
    proc = _run("process", env={"MM_FRAMEWORK_THREADS": "bogus"})
    assert proc.returncode == 2 and "MM_FRAMEWORK_THREADS must be 'inline'" in proc.stderr


def test_cache_mb_reports_the_cache(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(8, 4))
    args = ["process", "--spec", "toy_default", str(img), str(img), "--input-ids", "1,1", "--json"]
    assert main(args + ["--cache-mb", "4"]) == 0
    cache = json.loads(capsys.readouterr().out)["cache"]
    assert cache["misses"] == 1 and cache["entries"] == 1 and cache["max_bytes"] == 4 << 20
    assert main(args + ["--cache-mb", "-1"]) == 2
    assert "--cache-mb must be at least 0" in capsys.readouterr().err


def test_errors_name_the_file_tell_a_clip_to_use_video_and_word_a_bomb(toy, tmp_path, capsys):
    from test_bad_input import clip, jpeg_bomb

    good, notes = tmp_path / "a.png", tmp_path / "notes.txt"
    good.write_bytes(png_bytes(8, 4))
    notes.write_text("just notes\n")
    assert main(["process", "--spec", "toy_default", str(good), str(notes), "--input-ids", "1,1"]) == 2
    assert "MediaError: item 1 (notes.txt): image decode: cannot identify image file" in capsys.readouterr().err
    movie = tmp_path / "m.mp4"
    movie.write_bytes(clip())
    assert main(["process", "--spec", "toy_default", str(movie), "--input-ids", "1"]) == 2
    assert "item 0 (m.mp4): image decode: not an image but a video (MP4): pass it with --video" in capsys.readouterr().err
    bomb = tmp_path / "bomb.jpg"
    bomb.write_bytes(jpeg_bomb())
    assert main(["process", "--spec", "toy_default", str(bomb), "--input-ids", "1"]) == 2
    err = capsys.readouterr().err
    assert "item 0 (bomb.jpg): image is 65000x65000 = 4225000000 pixels, above the limit of" in err
    assert "decompression bomb" not in err.lower()
