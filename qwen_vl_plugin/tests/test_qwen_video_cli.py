"""``mm-framework process --video``: the summary shows a clip's float32 values
(``second_per_grid_ts``, the geometry's timestamps) as their shortest decimals; the
arrays written keep every bit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mm_framework.cli import main

av = pytest.importorskip("av", reason="encoding a clip needs PyAV (mm-framework[video])")


@pytest.fixture(scope="module")
def clip_7fps(tmp_path_factory):
    """21 frames of 64x48 at 7 fps: 2/7 s per temporal patch, which no float32 holds exactly."""
    path = tmp_path_factory.mktemp("clip") / "clip.mp4"
    with av.open(str(path), "w", format="mp4") as out:
        s = out.add_stream("mpeg4", rate=7)
        s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
        for k in range(21):
            frame = np.full((48, 64, 3), k * 9, np.uint8)
            out.mux(s.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        out.mux(s.encode())
    return path


def test_second_per_grid_ts_prints_without_float_noise(clip_7fps, tmp_path, capsys):
    npz = tmp_path / "out.npz"
    assert main(["process", "--spec", "qwen2_5_vl", "--video", str(clip_7fps), "--out", str(npz)]) == 0
    text = capsys.readouterr().out
    assert "second_per_grid_t=0.2857143)" in text and "second_per_grid_ts=[0.2857143]" in text
    assert "0.28571429" not in text
    assert main(["process", "--spec", "qwen2_5_vl", "--video", str(clip_7fps), "--json"]) == 0
    item = json.loads(capsys.readouterr().out)["items"][0]
    assert item["aux"]["second_per_grid_ts"] == [0.2857143]
    assert item["geometry"] == "VideoGrid(t=11, h=4, w=4, timestamps=(), second_per_grid_t=0.2857143)"
    saved = np.load(npz)["item0_second_per_grid_ts"]
    assert saved.dtype == np.float32 and saved.tobytes() == np.float32(2 / 7).tobytes()


def test_qwen3_timestamps_print_without_float_noise(clip_7fps, capsys):
    assert main(["process", "--spec", "qwen3_vl", "--video", str(clip_7fps), "--json"]) == 0
    item = json.loads(capsys.readouterr().out)["items"][0]
    assert "timestamps=(0.2857143, 1.4285715, 2.5714285)" in item["geometry"]
