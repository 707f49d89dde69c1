"""mm-framework inspect: the picture's size, grid lines where the grid says, tiles, the layout text."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import mm_framework as mmf
from mm_framework import picture
from mm_framework.cli import main

from conftest import png_bytes


def _red_columns(img: np.ndarray, rows: slice) -> set[int]:
    band = img[rows]
    red = (band[..., 0] == 255) & (band[..., 1] == 40) & (band[..., 2] == 40)
    return set(np.flatnonzero(red.mean(axis=0) > 0.9).tolist())


def test_bundled_sample_grid_matches_image_grid_thw(tmp_path, capsys):
    out_png = tmp_path / "view.png"
    assert main(["inspect", "--out", str(out_png)]) == 0
    text = capsys.readouterr().out
    assert "image 0: 151655 x 391 at 0..390" in text and f"wrote {out_png}" in text
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    grid = pipe.process(mmf.MmInput(images=[picture_sample()], input_ids=[151655])).items[0].aux["image_grid_thw"]
    t, gh, gw = grid.array.tolist()
    img = np.asarray(Image.open(out_png).convert("RGB"))
    w, h = 14 * gw, 14 * gh  # the resized size: 644 x 476
    assert img.shape[1] == w and img.shape[0] == h + 2 * picture.CAPTION_LINE + 4
    # Merge windows (2x2 patches) are the red lines: every 28 pixels.
    assert _red_columns(img, slice(0, h)) == {round(w * k / (gw // 2)) for k in range(1, gw // 2)}


def picture_sample() -> bytes:
    from importlib import resources

    return (resources.files("mm_framework") / "data" / "sample.jpg").read_bytes()


def test_intern_vl_shows_its_tiles(tmp_path):
    if "internvl2_5_8b" not in mmf.list_presets():
        pytest.skip("intern_vl is not installed")
    img = tmp_path / "wide.png"
    img.write_bytes(png_bytes(640, 480))
    out = mmf.pipeline_from_spec(mmf.preset("internvl2_5_8b")).process(mmf.MmInput(images=[img.read_bytes()], input_ids=[92546]))
    item = out.items[0]
    assert item.geometry == mmf.Tiles(13) and item.processed_size == (4 * 448, 3 * 448)
    lines = picture.grid_lines(item, out.offsets[0][1] - out.offsets[0][0] + 1, 1024 / (4 * 448))
    assert lines.note == "4x3 tiles + thumbnail" and len(lines.thick_x) == 3 and len(lines.thick_y) == 2
    assert main(["inspect", "--spec", "internvl2_5_8b", str(img), "--out", str(tmp_path / "tiles")]) == 0
    assert Image.open(tmp_path / "tiles.png").size[0] == 1024  # scaled to the sheet width


def test_several_items_make_one_contact_sheet(toy, tmp_path):
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    a.write_bytes(png_bytes(40, 20))
    b.write_bytes(png_bytes(24, 24))
    assert main(["inspect", "--spec", "toy_default", str(a), str(b), "--input-ids", "1,1", "--out", str(tmp_path / "s.png")]) == 0
    sheet = Image.open(tmp_path / "s.png")
    panel = 2 * picture.CAPTION_LINE + 4
    assert sheet.size == (360, 20 + panel + 8 + 24 + panel)


def test_layout_text_names_text_runs_and_items(toy_pipe):
    out = toy_pipe.process(mmf.MmInput(images=[png_bytes(8, 4)], input_ids=[5, 6, 1, 7]))
    assert picture.layout_text(out) == "Text 0..1 | image 0: 1 x 2 at 2..3 | Text 4..4"
