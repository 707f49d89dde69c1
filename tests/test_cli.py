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
from mm_framework import plugin as mmp
from mm_framework.cli import main
from mm_framework import content_hash, plugins
from mm_framework.kernels import native

from .conftest import png_bytes


def test_process_prints_summary_and_writes_npz(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(8, 4))
    out = tmp_path / "out.npz"
    args = ["process", "--spec", "toy_default", str(img), str(img), "--input-ids", "5,1,6,1", "--out", str(out)]
    assert main(args) == 0
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
    assert main(["process", "--spec", '{"family": "toy", "image_token_id": 3, "unnamed": true}', str(img)]) == 2
    assert ("InvalidInputError: request without text or input_ids, and family 'toy' names no image placeholder "
            "to build a default prompt from: give input_ids (--input-ids) or text") in capsys.readouterr().err


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


def test_model_directory_as_spec(toy, tmp_path, capsys):
    class Resolver:
        @mmp.hookimpl
        def mm_spec_from_hf_configs(self, config, preprocessor_config):
            if config.get("model_type") == "toy":
                return {"family": "toy", "image_token_id": preprocessor_config["image_token_id"]}
            return None

    (tmp_path / "config.json").write_text('{"model_type": "toy"}')
    (tmp_path / "preprocessor_config.json").write_text('{"image_token_id": 3}')
    name = plugins.register(Resolver(), name="toy-resolver")
    try:
        assert main(["tokens", "640", "480", "--spec", str(tmp_path)]) == 0
    finally:
        plugins.unregister(name)
    want = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 3}).num_media_tokens(640, 480)
    assert int(capsys.readouterr().out) == want


def test_a_spec_that_would_allocate_too_much_is_refused(capsys):
    spec = json.dumps({**mmf.preset("qwen2_vl_class_defaults"), "min_pixels": 10**8, "max_pixels": 10**8})
    big = mmf.pipeline_from_spec(spec, limits=mmf.Limits(max_processed_pixels=10**7))
    with pytest.raises(mmf.LimitExceededError, match="above Limits.max_processed_pixels = 10000000"):
        big.num_media_tokens(640, 480)


def test_plugins_and_tokens(toy, capsys):
    assert main(["plugins"]) == 0
    text = capsys.readouterr().out
    assert "toy  (<in-process plugin toy-plugin>)" in text and "presets: toy_default" in text
    assert "hooks: mm_capabilities, mm_layout, mm_plan_item, mm_positions, mm_process_item" in text
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
    monkeypatch.undo()
    native.set_mode(None)


@pytest.mark.parametrize("name, value, forms", [
    ("MM_FRAMEWORK_KERNELS", "turbo", "'native', 'portable', or unset for native when built, else portable"),
    ("MM_FRAMEWORK_THREADS", "abc", "'inline', a number of threads, or 0 or unset for min(8, cores)"),
    ("REQUEST_TIMEOUT", "1.5", "a positive whole number of seconds (default 3)"),
])
def test_version_and_plugins_refuse_a_bad_environment_variable(name, value, forms):
    for args in (["--version"], ["plugins"]):
        proc = _run(*args, env={name: value})
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr == f"error: SettingError: {name} must be {forms}; got {value!r}\n"


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
    hidden = "qwen_vl (mm-framework-qwen-vl) is installed but hidden by MM_FRAMEWORK_LOAD_PLUGINS='qwen_vl_plugin'"
    assert hidden in proc.stdout
    named = "MM_FRAMEWORK_LOAD_PLUGINS names 'qwen_vl_plugin', which is neither an installed plugin's entry-point"
    assert named in proc.stdout
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


# --- families without video, default prompts, tokens --json ----------------------------------

NO_VIDEO_PRESETS = {"gemma3_4b_it": "gemma3", "pixtral_12b": "pixtral", "internvl2_5_8b": "intern_vl",
                    "llava_onevision_qwen2_7b_ov": "llava_onevision", "paddleocr_vl": "paddleocr_vl",
                    "smolvlm_256m_instruct": "smolvlm"}


def _installed(preset):
    if preset not in mmf.list_presets():
        pytest.skip(f"needs the {preset} preset")


@pytest.mark.parametrize("preset", list(NO_VIDEO_PRESETS))
def test_tokens_refuses_a_clip_for_a_family_without_video(preset, capsys):
    _installed(preset)
    assert main(["tokens", "320", "240", "--frames", "30", "--fps", "10", "--spec", preset]) == 2
    err = capsys.readouterr()
    assert err.out == "" and (f"UnsupportedError: family {NO_VIDEO_PRESETS[preset]!r} does not take video: "
                              "frames and fps describe a clip") in err.err


def test_tokens_for_a_clip_is_unchanged_and_fps_needs_frames(capsys):
    _installed("qwen2_vl")
    assert main(["tokens", "320", "240", "--frames", "30", "--fps", "10"]) == 0
    assert capsys.readouterr().out == "1485\n"
    assert main(["tokens", "320", "240", "--fps", "10"]) == 2
    assert "InvalidInputError: fps=10.0 without frames" in capsys.readouterr().err


def test_tokens_json_gives_count_family_and_plan(capsys):
    _installed("qwen2_vl")
    assert main(["tokens", "640", "480", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "tokens": 391, "family": "qwen_vl", "modality": "image", "size": [640, 480], "frames": None, "fps": None,
        "geometry": "Grid(t=1, h=34, w=46)", "processed_size": [644, 476]}
    assert main(["tokens", "320", "240", "--frames", "30", "--fps", "10", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["tokens"], doc["modality"], doc["frames"], doc["fps"]) == (1485, "video", 30, 10.0)
    assert doc["geometry"].startswith("VideoGrid(t=15, h=18, w=22") and doc["processed_size"] == [308, 252]


def test_process_a_video_for_a_family_without_video_says_so_first(tmp_path, capsys):
    _installed("gemma3_4b_it")
    assert main(["process", "--video", str(tmp_path / "clip.mp4"), "--spec", "gemma3_4b_it"]) == 2
    want = "error: UnsupportedError: item 0 (clip.mp4): family 'gemma3' does not take video\n"
    assert capsys.readouterr().err == want
    assert main(["process", str(tmp_path / "a.png"), "--video", "clip.mp4", "--spec", "gemma3_4b_it",
                 "--input-ids", "255999"]) == 2
    assert "UnsupportedError: item 1 (clip.mp4): family 'gemma3' does not take video" in capsys.readouterr().err


def test_default_prompt_of_an_image_and_a_video(tmp_path, capsys):
    _installed("qwen2_vl")
    av = pytest.importorskip("av")
    clip = tmp_path / "clip.mp4"
    with av.open(str(clip), "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for k in range(4):
            frame = np.full((32, 32, 3), 60 * k, np.uint8)
            out.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(stream.encode())
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(32, 32))
    docs = []
    for ids in ([], ["--input-ids", "151655,151656"]):
        assert main(["process", str(img), "--video", str(clip), "--json", *ids]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    spans = [[(it["modality"], it["span"]) for it in doc["items"]] for doc in docs]
    assert spans[0] == spans[1]
    assert docs[0]["tokens"] == docs[1]["tokens"] and docs[0]["layout"] == docs[1]["layout"]


def test_errors_name_the_file_tell_a_clip_to_use_video_and_word_a_bomb(toy, tmp_path, capsys):
    from .test_bad_input import clip, jpeg_bomb

    good, notes = tmp_path / "a.png", tmp_path / "notes.txt"
    good.write_bytes(png_bytes(8, 4))
    notes.write_text("just notes\n")
    assert main(["process", "--spec", "toy_default", str(good), str(notes), "--input-ids", "1,1"]) == 2
    assert "MediaError: item 1 (notes.txt): image decode: cannot identify image file" in capsys.readouterr().err
    movie = tmp_path / "m.mp4"
    movie.write_bytes(clip())
    assert main(["process", "--spec", "toy_default", str(movie), "--input-ids", "1"]) == 2
    want = "item 0 (m.mp4): image decode: not an image but a video (MP4): pass it with --video"
    assert want in capsys.readouterr().err
    bomb = tmp_path / "bomb.jpg"
    bomb.write_bytes(jpeg_bomb())
    assert main(["process", "--spec", "toy_default", str(bomb), "--input-ids", "1"]) == 2
    err = capsys.readouterr().err
    assert "item 0 (bomb.jpg): image is 65000x65000 = 4225000000 pixels, above the limit of" in err
    assert "decompression bomb" not in err.lower()
