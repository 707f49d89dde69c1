"""What ``mm-framework inspect`` draws: each item as the model sees it, with its patch grid
and merge windows (or tiles), a caption, and a text view of the expanded prompt.

The picture is for people, not for parity: the image is resized with Pillow to the size
the family processes it at (``OutputItem.processed_size``) and then, if wide, scaled down
for the sheet; the grid is drawn from the item's geometry on that picture, each line with a
dark halo so that it shows on any picture (a white patch line on a light image, a red window
on a red one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .carriers import Grid, OutputItem, Tiles
from .request import Output

SHEET_WIDTH = 1024  # wider panels are scaled down to this
CAPTION_LINE = 16
PATCH_COLOUR, WINDOW_COLOUR, TILE_COLOUR = (255, 255, 255), (255, 40, 40), (255, 200, 0)
# The default font's space is 2 pixels wide, too narrow to read as a space.
WORD_GAP = 5


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
    out = Image.new("RGB", (max(lines.width, 360), lines.height + CAPTION_LINE * len(caption) + 4), (24, 24, 24))
    out.paste(Image.fromarray(pixels), (0, 0))
    text, font = ImageDraw.Draw(out), ImageFont.load_default()
    for k, line in enumerate(caption):
        for x, word in caption_words(line, font):
            text.text((4 + x, lines.height + 2 + k * CAPTION_LINE), word, fill=(235, 235, 235), font=font)
    return out, lines


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
