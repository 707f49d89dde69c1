"""Prompt expansion: each ``[IMG]`` placeholder becomes its image's token grid.

``rows`` lines of ``cols`` ``[IMG]`` tokens, each line closed by ``[IMG_BREAK]`` except
the last, closed by ``[IMG_END]`` (``PixtralProcessor.replace_image_token``;
docs/families/pixtral.md §6). The content span runs from the first to the last
``[IMG]``: ``[IMG_END]`` stays outside it; the interior ``[IMG_BREAK]`` tokens cannot.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from mm_framework import plugin as mmp


@functools.lru_cache(maxsize=256)
def image_pattern(rows: int, cols: int, image: int, brk: int, end: int) -> mmp.Explicit:
    """The ``Explicit`` expansion of one image (cached: the same grids recur)."""
    if rows <= 0 or cols <= 0:
        raise mmp.InternalError(f"pixtral: empty token grid {rows}x{cols}")
    line = np.full(cols + 1, image, dtype=np.int64)
    line[-1] = brk
    ids = np.tile(line, rows)
    ids[-1] = end
    return mmp.Explicit(tuple(ids.tolist()), 0, len(ids) - 1)


def span_length(rows: int, cols: int) -> int:
    """Tokens inside an image's content span (its offsets), ``[IMG_END]`` excluded."""
    return rows * (cols + 1) - 1


def expand(
    input_ids: np.ndarray, grids: Sequence[tuple[int, int]], image: int, brk: int, end: int
) -> mmp.TokenLayout:
    """The layout putting the k-th ``image`` id's grid ``grids[k]`` (rows, cols) in its place."""
    by_slot = mmp.layout_by_placeholder(input_ids, image, [span_length(r, c) for r, c in grids])
    return mmp.TokenLayout(
        mmp.Media(seg.item, image_pattern(*grids[seg.item], image, brk, end)) if isinstance(seg, mmp.Media) else seg
        for seg in by_slot.segments
    )
