"""mm-framework inspect: the picture's size, grid lines where the grid says, tiles, the layout text."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageFont

import mm_framework as mmf
from mm_framework import picture
from mm_framework.cli import main

from .conftest import png_bytes


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
    pipe = mmf.pipeline_from_spec(mmf.preset("internvl2_5_8b"))
    out = pipe.process(mmf.MmInput(images=[img.read_bytes()], input_ids=[92546]))
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
    args = ["inspect", "--spec", "toy_default", str(a), str(b), "--input-ids", "1,1", "--out", str(tmp_path / "s.png")]
    assert main(args) == 0
    sheet = Image.open(tmp_path / "s.png")
    panel = 2 * picture.CAPTION_LINE + 4
    assert sheet.size == (360, 20 + panel + 8 + 24 + panel)


def test_layout_text_names_text_runs_and_items(toy_pipe):
    out = toy_pipe.process(mmf.MmInput(images=[png_bytes(8, 4)], input_ids=[5, 6, 1, 7]))
    assert picture.layout_text(out) == "Text 0..1 | image 0: 1 x 2 at 2..3 | Text 4..4"


def _blank_runs(strip: np.ndarray) -> list[int]:
    """Widths of the ink-free column runs between the first and the last inked column."""
    ink = (strip.max(axis=2) > 128).any(axis=0)
    cols = np.flatnonzero(ink)
    edges = np.flatnonzero(np.diff(ink[cols[0] : cols[-1] + 1].astype(np.int8)))
    starts, ends = edges[::2] + 1, edges[1::2] + 1
    return (ends - starts).tolist()


def test_caption_words_have_visible_spaces(tmp_path, capsys):
    out_png = tmp_path / "view.png"
    assert main(["inspect", "--out", str(out_png)]) == 0
    capsys.readouterr()
    img = np.asarray(Image.open(out_png).convert("RGB"))
    h = img.shape[0] - 2 * picture.CAPTION_LINE - 4
    captions = ["image 0: 640x480 -> 644x476  grid 1x34x46, 2x2 patches per token", "391 tokens at 0..390"]
    for k, caption in enumerate(captions):
        strip = img[h + 2 + k * picture.CAPTION_LINE : h + 2 + (k + 1) * picture.CAPTION_LINE]
        # Letters of a word are at most 2 blank columns apart; a space reads as one from 5.
        assert sum(r >= 5 for r in _blank_runs(strip)) == len(caption.split()) - 1, caption


def test_caption_words_keep_their_order_and_gaps():
    font = ImageFont.load_default()
    placed = picture.caption_words("324 tokens at 0..323", font)
    assert [w for _, w in placed] == ["324", "tokens", "at", "0..323"]
    for (x, word), (nx, _) in zip(placed, placed[1:]):
        assert nx - (x + font.getlength(word)) >= picture.WORD_GAP - 1  # rounding of x
    wide = picture.caption_words("a  b", font)
    assert wide[1][0] > picture.caption_words("a b", font)[1][0]


@pytest.mark.parametrize("colour", [(255, 0, 0), (250, 250, 250)], ids=["red", "near-white"])
def test_grid_and_windows_show_on_any_image(tmp_path, capsys, colour):
    src, out_png = tmp_path / "plain.png", tmp_path / "view.png"
    Image.new("RGB", (640, 480), colour).save(src)
    assert main(["inspect", str(src), "--out", str(out_png)]) == 0
    capsys.readouterr()
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    out = pipe.process(mmf.MmInput(images=[src.read_bytes()], input_ids=[151655]))
    lines = picture.grid_lines(out.items[0], out.offsets[0][1] - out.offsets[0][0] + 1, 1.0)
    assert lines.thin_x and lines.thick_x and lines.thin_y and lines.thick_y
    img = np.asarray(Image.open(out_png).convert("RGB"))[: lines.height].astype(np.int32)
    # A line pixel shows when a pixel of its 3x3 neighbourhood stands out from the plain image
    # (where two lines cross, the neighbours along one line are the other line).
    far = np.sqrt(((img - np.asarray(colour)) ** 2).sum(axis=2)) >= 100
    shown = np.zeros_like(far)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            shown[1:-1, 1:-1] |= far[1 + dy : far.shape[0] - 1 + dy, 1 + dx : far.shape[1] - 1 + dx]
    for x in lines.thin_x + lines.thick_x:
        assert shown[1:-1, x].all(), f"column {x}"
    for y in lines.thin_y + lines.thick_y:
        assert shown[y, 1:-1].all(), f"row {y}"


def _white_columns(img: np.ndarray, row: int) -> set[int]:
    return set(np.flatnonzero((img[row] == 255).all(axis=1)).tolist())


@pytest.mark.parametrize(("tokens", "step"), [(1, 1), (175, 20), (1000, 100), (7500, 500)])
def test_token_boundaries_are_equal_slices_in_counting_steps(tokens, step):
    columns, got = picture.token_boundaries(tokens, 1024, 64)
    assert got == step
    assert columns == [round(1024 * k / tokens) for k in range(step, tokens, step)]
    assert all(b - a >= 64 - 1 for a, b in zip(columns, columns[1:]))


def test_audio_panel_shows_waveform_mel_and_token_ticks():
    rate, tokens = 16000, 50
    t = np.arange(2 * rate) / rate
    audio = mmf.plugin.DecodedAudio((0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), rate, channels=2)
    item = mmf.plugin.OutputItem(None, {}, 0, modality="audio")
    img = np.asarray(picture.audio_panel(audio, item, (3, 3 + tokens - 1), 1))
    bands = picture.WAVE_HEIGHT + picture.TICK_HEIGHT + picture.MEL_HEIGHT
    assert img.shape == (bands + 2 * picture.CAPTION_LINE + 4, picture.SHEET_WIDTH, 3)
    # Every boundary of 50 tokens over 1024 pixels (20 apart) is a white tick.
    tick_row = picture.WAVE_HEIGHT + picture.TICK_HEIGHT // 2
    lines, _ = picture.token_boundaries(tokens, 1024, picture.LINE_GAP)
    assert _white_columns(img, tick_row) == set(picture.token_boundaries(tokens, 1024, 1)[0]) - set(lines)
    # 440 Hz is one bright mel row, low in the image; the top rows (high frequencies) are dark.
    mel = img[picture.WAVE_HEIGHT + picture.TICK_HEIGHT:bands, :, 0]
    column = mel[:, 500]  # mid-clip (the edges click) and off the red token lines
    assert column.argmax() > picture.MEL_HEIGHT // 2 and column[:20].max() < column.max() // 2


def test_display_mel_follows_the_tone():
    rate = 8000
    t = np.arange(rate) / rate
    low, high = (mmf.plugin.DecodedAudio(np.sin(2 * np.pi * f * t).astype(np.float32), rate) for f in (300, 3000))
    a, b = picture.display_mel(low), picture.display_mel(high)
    assert a.shape == b.shape == (80, 100) and a.dtype == np.uint8
    assert a[:, 50].argmax() > b[:, 50].argmax()  # high frequencies on top


def test_video_panel_shows_sampled_frames_with_the_grid():
    frames = np.zeros((12, 56, 84, 3), np.uint8)
    frames.flags.writeable = False
    clip = mmf.plugin.VideoClip(frames, tuple(range(0, 24, 2)), 24, 10.0)
    item = mmf.plugin.OutputItem(None, {}, 0, modality="video", geometry=mmf.Grid(6, 4, 6), size=(84, 56),
                                 processed_size=(84, 56))
    img = np.asarray(picture.video_panel(clip, item, (0, 35), 0))
    shown = picture.shown_frames(12)
    assert shown == [0, 2, 3, 5, 6, 8, 9, 11]
    assert img.shape[1] == len(shown) * (84 + 4) - 4 and img.shape[0] == 56 + 2 * picture.CAPTION_LINE + 4
    # Each shown frame carries its 2x2 merge windows in red: 6 patch columns, 3 windows.
    for k in range(len(shown)):
        cols = {c - k * 88 for c in _red_columns(img, slice(0, 56)) if k * 88 <= c < k * 88 + 84}
        assert cols == {28, 56}


def test_inspect_draws_audio_and_video(tmp_path, capsys):
    from .media.audio_helpers import wav

    if not {"qwen2_audio", "qwen2_vl"} <= set(mmf.list_presets()):
        pytest.skip("the qwen2_audio and qwen_vl families are not installed")
    pytest.importorskip("soundfile")
    sound = tmp_path / "tone.wav"
    sound.write_bytes(wav(3.0, 16000))
    assert main(["inspect", "--spec", "qwen2_audio", "--audio", str(sound), "--out", str(tmp_path / "a")]) == 0
    assert "audio 0: 151646 x 75 at 0..74" in capsys.readouterr().out
    assert Image.open(tmp_path / "a.png").size[0] == picture.SHEET_WIDTH
    from .test_driver_video import encode_clip

    clip = tmp_path / "c.mp4"
    clip.write_bytes(encode_clip(np.full((4, 48, 64, 3), 90, np.uint8)))
    assert main(["inspect", "--spec", "qwen2_vl", "--video", str(clip), "--out", str(tmp_path / "v.png")]) == 0
    assert "video 0: 151656 x" in capsys.readouterr().out
