"""What ``mm-framework inspect`` draws: each item as the model sees it, with its patch grid
and merge windows (or tiles), a caption, and a text view of the expanded prompt. A video
shows its sampled frames with the grid on each; an audio item its waveform and a log-mel
image with the boundaries of its tokens.

The picture is for people, not for parity: the image is resized with Pillow to the size
the family processes it at (``OutputItem.processed_size``) and then, if wide, scaled down
for the sheet; the grid is drawn from the item's geometry on that picture, each line with a
dark halo so that it shows on any picture (a white patch line on a light image, a red window
on a red one). An audio item's log-mel image is a display spectrogram (25 ms windows every
10 ms, 80 mels) of the decoded samples, not the family's features, and its tokens are drawn
as equal slices of the item's duration: what a token covers, not where the family's frames
fall exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .carriers import DecodedAudio, Grid, OutputItem, Tiles
from .kernels import StftLogMel
from .media.video import VideoClip
from .request import Output

SHEET_WIDTH = 1024  # wider panels are scaled down to this
CAPTION_LINE = 16
PATCH_COLOUR, WINDOW_COLOUR, TILE_COLOUR = (255, 255, 255), (255, 40, 40), (255, 200, 0)
# The default font's space is 2 pixels wide, too narrow to read as a space.
WORD_GAP = 5
SHOWN_FRAMES = 8  # a longer clip shows this many of its frames, evenly spread
WAVE_HEIGHT, MEL_HEIGHT = 96, 160
WAVE_COLOUR, BACKGROUND = (120, 200, 255), (24, 24, 24)
TICK_HEIGHT, TICK_GAP, LINE_GAP = 10, 3, 64  # token ticks, and the full-height lines every few tokens


@attrs.frozen
class Lines:
    """Where grid lines go on a panel of ``width`` x ``height`` (already scaled)."""

    width: int
    height: int
    thin_x: tuple[int, ...] = ()
    thin_y: tuple[int, ...] = ()
    thick_x: tuple[int, ...] = ()
    thick_y: tuple[int, ...] = ()
    note: str = ""


def _steps(total: int, count: int, scale: float) -> tuple[int, ...]:
    """Inner line positions splitting ``total`` source pixels into ``count`` equal cells."""
    return tuple(round(total * k / count * scale) for k in range(1, count))


def grid_lines(item: OutputItem, tokens: int, scale: float) -> Lines:
    """The lines of one item: patches and merge windows of a ``Grid``, tiles of ``Tiles``."""
    w, h = item.processed_size or item.size
    sw, sh = max(1, round(w * scale)), max(1, round(h * scale))
    g = item.geometry
    if isinstance(g, Grid) and g.h > 0 and g.w > 0:
        merge = math.isqrt(max(1, g.t * g.h * g.w // max(1, tokens)))
        windows = merge > 1 and g.h % merge == 0 and g.w % merge == 0 and merge * merge * tokens == g.t * g.h * g.w
        note = f"grid {g.t}x{g.h}x{g.w}" + (f", {merge}x{merge} patches per token" if windows else "")
        if not windows:
            return Lines(sw, sh, _steps(w, g.w, scale), _steps(h, g.h, scale), note=note)
        return Lines(sw, sh, _steps(w, g.w, scale), _steps(h, g.h, scale),
                     _steps(w, g.w // merge, scale), _steps(h, g.h // merge, scale), note)
    if isinstance(g, Tiles) and g.n > 0:
        cols, rows, thumb = _tile_layout(w, h, g.n)
        note = f"{cols}x{rows} tiles" + (" + thumbnail" if thumb else "")
        return Lines(sw, sh, thick_x=_steps(w, cols, scale), thick_y=_steps(h, rows, scale), note=note)
    return Lines(sw, sh, note="" if g is None else type(g).__name__)


def _tile_layout(w: int, h: int, n: int) -> tuple[int, int, bool]:
    """Columns and rows of square tiles covering a ``w`` x ``h`` canvas in ``n`` tiles, one
    of them a thumbnail when the canvas holds ``n - 1``."""
    for blocks, thumb in ((n - 1, True), (n, False)):
        if blocks <= 0:
            continue
        side = math.isqrt(w * h // blocks)
        if side > 0 and side * side * blocks == w * h and w % side == 0 and h % side == 0:
            return w // side, h // side, thumb
    return 1, 1, False


def panel(rgb: np.ndarray, item: OutputItem, span: tuple[int, int], index: int) -> tuple[Image.Image, Lines]:
    """One item's picture with its caption, and the lines drawn on it."""
    w, h = item.processed_size or item.size
    scale = min(1.0, SHEET_WIDTH / w)
    tokens = span[1] - span[0] + 1
    lines = grid_lines(item, tokens, scale)
    image = Image.fromarray(np.ascontiguousarray(rgb)).resize((lines.width, lines.height), Image.Resampling.BICUBIC)
    pixels = np.array(image)
    thick = TILE_COLOUR if isinstance(item.geometry, Tiles) else WINDOW_COLOUR
    _draw_lines(pixels, [(lines.thin_x, lines.thin_y, PATCH_COLOUR), (lines.thick_x, lines.thick_y, thick)])
    ow, oh = item.size
    caption = [
        f"{item.modality} {index}: {ow}x{oh} -> {w}x{h}" + (f"  {lines.note}" if lines.note else ""),
        f"{tokens} tokens at {span[0]}..{span[1]}" + (f"  (shown at {scale:.2f}x)" if scale < 1 else ""),
    ]
    return _captioned(pixels, caption), lines


def _captioned(pixels: np.ndarray, caption: Sequence[str]) -> Image.Image:
    """``pixels`` above the caption's lines, on a sheet at least 360 pixels wide."""
    height, width = pixels.shape[:2]
    out = Image.new("RGB", (max(width, 360), height + CAPTION_LINE * len(caption) + 4), BACKGROUND)
    out.paste(Image.fromarray(pixels), (0, 0))
    text, font = ImageDraw.Draw(out), ImageFont.load_default()
    for k, line in enumerate(caption):
        for x, word in caption_words(line, font):
            text.text((4 + x, height + 2 + k * CAPTION_LINE), word, fill=(235, 235, 235), font=font)
    return out


def item_panel(media: object, item: OutputItem, span: tuple[int, int], index: int) -> Image.Image:
    """The panel of one decoded item (``Pipeline.decode``'s media): an image, a clip or audio."""
    if isinstance(media, VideoClip):
        return video_panel(media, item, span, index)
    if isinstance(media, DecodedAudio):
        return audio_panel(media, item, span, index)
    return panel(media.rgb, item, span, index)[0]


def shown_frames(count: int) -> list[int]:
    """Which of ``count`` frames a video panel shows: all, or ``SHOWN_FRAMES`` evenly spread."""
    if count <= SHOWN_FRAMES:
        return list(range(count))
    return [round(k * (count - 1) / (SHOWN_FRAMES - 1)) for k in range(SHOWN_FRAMES)]


def video_panel(clip: VideoClip, item: OutputItem, span: tuple[int, int], index: int) -> Image.Image:
    """The clip's sampled frames side by side, each resized to the processed size with the
    item's per-frame grid on it, and which source frame each is."""
    w, h = item.processed_size or item.size or (clip.width, clip.height)
    shown = shown_frames(clip.num_frames)
    scale = min(1.0, SHEET_WIDTH / (len(shown) * w + 4 * (len(shown) - 1)))
    tokens = span[1] - span[0] + 1
    lines = grid_lines(attrs.evolve(item, processed_size=(w, h)), tokens, scale)
    strip = np.full((lines.height, len(shown) * (lines.width + 4) - 4, 3), BACKGROUND, np.uint8)
    for k, f in enumerate(shown):
        frame = Image.fromarray(clip.frames[f]).resize((lines.width, lines.height), Image.Resampling.BICUBIC)
        pixels = np.array(frame)
        _draw_lines(pixels, [(lines.thin_x, lines.thin_y, PATCH_COLOUR), (lines.thick_x, lines.thick_y, WINDOW_COLOUR)])
        x = k * (lines.width + 4)
        strip[:, x:x + lines.width] = pixels
    picked = ", ".join(str(clip.indices[f]) for f in shown)
    caption = [
        f"video {index}: {clip.num_frames} frames of {clip.width}x{clip.height} -> {w}x{h}"
        + (f"  {lines.note}" if lines.note else ""),
        f"{tokens} tokens at {span[0]}..{span[1]}  source frames {picked}"
        + (f" ({len(shown)} of {clip.num_frames} shown)" if len(shown) < clip.num_frames else ""),
    ]
    return _captioned(strip, caption)


def token_boundaries(tokens: int, width: int, gap: int) -> tuple[list[int], int]:
    """Columns between ``tokens`` equal slices of ``width`` pixels, every ``step``-th one
    (``step`` 1, 2, 5, 10, 20, ...) so that they are at least ``gap`` pixels apart; and ``step``."""
    need, step = math.ceil(gap * tokens / max(width, 1)), 1
    while step < need:  # 1, 2, 5, 10, 20, 50, ...: steps a reader counts in
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return [round(width * k / tokens) for k in range(step, tokens, step)], step


def display_mel(audio: DecodedAudio) -> np.ndarray:
    """uint8 ``[80, frames]`` log-mel of the samples, high frequencies on top, the top 80 dB shown."""
    rate = audio.sample_rate
    window = max(2, rate // 40)
    mel = StftLogMel(n_mels=80, sampling_rate=rate, hop_length=max(1, rate // 100), win_length=window,
                     n_fft=window, f_max=min(8000.0, rate / 2))(np.asarray(audio.samples))
    top = float(mel.max())
    level = np.clip((mel - (top - 4.0)) / 4.0, 0.0, 1.0)  # log10 magnitudes: 4 is 80 dB
    return np.round(level.T[::-1] * 255).astype(np.uint8)


def audio_panel(audio: DecodedAudio, item: OutputItem, span: tuple[int, int], index: int) -> Image.Image:
    """The waveform above a log-mel image, the token boundaries drawn across both."""
    width, samples = SHEET_WIDTH, np.asarray(audio.samples)
    seconds = len(samples) / audio.sample_rate
    wave = np.full((WAVE_HEIGHT, width, 3), BACKGROUND, np.uint8)
    edges = np.linspace(0, len(samples), width + 1).astype(int)
    peak = max(float(np.abs(samples).max()), 1e-9)
    middle = (WAVE_HEIGHT - 1) / 2
    for x in range(width):
        block = samples[edges[x]:max(edges[x + 1], edges[x] + 1)]
        top = round(middle - float(block.max()) / peak * middle)
        bottom = round(middle - float(block.min()) / peak * middle)
        wave[top:bottom + 1, x] = WAVE_COLOUR
    level = Image.fromarray(display_mel(audio)).resize((width, MEL_HEIGHT), Image.Resampling.BILINEAR)
    mel = np.round(np.asarray(level)[..., None] * np.array([1.0, 0.75, 0.35])).astype(np.uint8)
    ticks = np.full((TICK_HEIGHT, width, 3), BACKGROUND, np.uint8)
    tokens = span[1] - span[0] + 1
    tick_columns, tick_step = token_boundaries(tokens, width, TICK_GAP)
    ticks[:, [x for x in tick_columns if x < width]] = PATCH_COLOUR
    pixels = np.concatenate([wave, ticks, mel])
    columns, step = token_boundaries(tokens, width, LINE_GAP)
    _draw_lines(pixels, [(columns, (), WINDOW_COLOUR)])
    caption = [
        f"audio {index}: {seconds:.2f} s at {audio.sample_rate} Hz, {audio.channels} channel"
        + ("s" if audio.channels != 1 else "") + " (mono as processed)",
        f"{tokens} tokens at {span[0]}..{span[1]}, {1000 * seconds / tokens:.0f} ms each; ticks: "
        + ("token boundaries" if tick_step == 1 else f"every {tick_step} tokens") + f"; red lines: every {step} tokens",
    ]
    return _captioned(pixels, caption)


LineGroup = tuple[Sequence[int], Sequence[int], tuple[int, int, int]]  # columns, rows, colour


def _draw_lines(pixels: np.ndarray, groups: Sequence[LineGroup]) -> None:
    """Each group's full-height columns and full-width rows in its colour (later groups on
    top), every line between two darkened neighbours: a halo that shows the line where the
    image under it has the line's colour."""
    cores = [(_line_mask(pixels.shape[:2], xs, ys), colour) for xs, ys, colour in groups]
    on = np.logical_or.reduce([mask for mask, _ in cores])
    halo = np.zeros_like(on)
    halo[1:] |= on[:-1]
    halo[:-1] |= on[1:]
    halo[:, 1:] |= on[:, :-1]
    halo[:, :-1] |= on[:, 1:]
    pixels[halo & ~on] //= 2
    for mask, colour in cores:
        pixels[mask] = colour


def _line_mask(shape: tuple[int, int], xs: Sequence[int], ys: Sequence[int]) -> np.ndarray:
    height, width = shape
    mask = np.zeros(shape, bool)
    cols, rows = np.asarray(xs, int), np.asarray(ys, int)
    mask[:, cols[cols < width]] = True  # rounding may put a line of a tiny scale on the edge
    mask[rows[rows < height], :] = True
    return mask


def caption_words(line: str, font: ImageFont.ImageFont | ImageFont.FreeTypeFont) -> list[tuple[int, str]]:
    """Each word of a caption line and its x offset, words at least ``WORD_GAP`` pixels apart
    (runs of spaces keep their count)."""
    placed, x = [], 0.0
    gap = max(font.getlength(" "), WORD_GAP)
    for word in line.split(" "):
        if word:
            placed.append((round(x), word))
            x += font.getlength(word)
        x += gap
    return placed


def sheet(panels: Sequence[Image.Image]) -> Image.Image:
    """Panels stacked top to bottom, 8 pixels apart."""
    width = max(p.width for p in panels)
    height = sum(p.height for p in panels) + 8 * (len(panels) - 1)
    out = Image.new("RGB", (width, height), (0, 0, 0))
    y = 0
    for p in panels:
        out.paste(p, (0, y))
        y += p.height + 8
    return out


def layout_text(out: Output) -> str:
    """``Text 0..12 | image 0: 151655 x 391 at 13..403 | Text 404..410`` for a prompt."""
    parts, pos = [], 0
    for i, (item, (s, e)) in enumerate(zip(out.items, out.offsets)):
        if s > pos:
            parts.append(f"Text {pos}..{s - 1}")
        run = out.input_ids[s : e + 1]
        ids = f"{int(run[0])} x {e - s + 1}" if (run == run[0]).all() else f"{e - s + 1} ids"
        parts.append(f"{item.modality} {i}: {ids} at {s}..{e}")
        pos = e + 1
    if pos < len(out.input_ids):
        parts.append(f"Text {pos}..{len(out.input_ids) - 1}")
    return " | ".join(parts)
