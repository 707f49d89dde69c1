"""M-RoPE positions of prompts whose media are still images, as transformers 5.24's
``get_rope_index`` computes them for Qwen2-VL-style models (Qwen2/2.5/3-VL, PaddleOCR-VL).

Families whose model uses these three-row positions return :func:`image_only` from
``mm_positions``; :func:`grid_block` is the one grid's block, for a family whose own
index also spaces video grids (qwen_vl's ``rope_index``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .carriers import Grid, MRope
from .errors import LayoutError

__all__ = ["grid_block", "image_only"]


def image_only(input_len: int, items: Sequence[tuple[int, int, Grid]], merge_size: int) -> MRope:
    """M-RoPE ids for a prompt whose media are still images.

    ``items`` are ``(start, end_inclusive, grid)`` in prompt order. Text runs count up on
    all three rows; an image's tokens get ``(next+t, next+h, next+w)`` over its merged
    grid, and text after it resumes at ``next + max(t, h, w)``. Equals transformers 5.x
    ``get_rope_index`` for images (pads excluded).
    """
    L = int(input_len)
    pos = np.empty((3, L), dtype=np.int64)
    st = 0
    nxt = 0
    for start, end, grid in items:
        if start < st or end >= L:
            raise LayoutError(f"mrope: item range ({start},{end}) out of order/bounds")
        n_text = start - st
        if n_text:
            pos[:, st:start] = np.arange(nxt, nxt + n_text, dtype=np.int64)
        nxt += n_text
        t, gh, gw = grid.t, grid.h // merge_size, grid.w // merge_size
        if t * gh * gw != end - start + 1:
            raise LayoutError("mrope: token span does not match grid")
        grid_block(pos[:, start : end + 1], nxt + np.arange(t, dtype=np.int64), nxt, gh, gw)
        nxt += max(t, gh, gw)
        st = end + 1
    if st < L:
        pos[:, st:] = np.arange(nxt, nxt + L - st, dtype=np.int64)
    top = int(pos.max()) if L else -1
    return MRope(positions=pos, delta=top + 1 - L)


def grid_block(block: np.ndarray, temporal: np.ndarray, start: int, gh: int, gw: int) -> None:
    """One grid's ``[3, t*gh*gw]`` positions, t-major: ``(temporal[t], start + y, start + x)``."""
    grid = block.reshape(3, len(temporal), gh, gw)
    grid[0] = temporal[:, None, None]
    grid[1] = (start + np.arange(gh, dtype=np.int64))[None, :, None]
    grid[2] = (start + np.arange(gw, dtype=np.int64))[None, None, :]
