"""The ``mm-framework`` command line, driven in-process with the toy family."""

from __future__ import annotations

import numpy as np
import pytest

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
    assert "item 0: " in text and "8x4" in text and "tokens 2 at [1, 2]" in text
    assert f"hash {content_hash(img.read_bytes()):#018x}" in text and "positions: 1-D RoPE" in text
    saved = np.load(out)
    assert saved["input_ids"].tolist() == [5, 1, 1, 6, 1, 1]
    assert saved["offsets"].tolist() == [[1, 2], [4, 5]]
    assert saved["item1_feature"].shape == (2, 3) and saved["item0_grid"].tolist() == [1, 1, 2]
    assert saved["hashes"].dtype == np.uint64


def test_default_prompt_is_one_placeholder_per_image(toy, tmp_path, capsys):
    img = tmp_path / "a.png"
    img.write_bytes(png_bytes(4, 4))
    assert main(["process", "--spec", '{"family": "toy", "image_token_id": 3}', str(img)]) == 0
    assert "input_ids: 1 tokens" in capsys.readouterr().out


def test_errors_exit_2_with_the_typed_message(toy, tmp_path, capsys):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    assert main(["process", "--spec", "toy_default", str(bad)]) == 2
    assert "MediaError: item 0: image decode" in capsys.readouterr().err
    assert main(["process", "--spec", "no-such-preset"]) == 2
    assert "SpecError" in capsys.readouterr().err


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
