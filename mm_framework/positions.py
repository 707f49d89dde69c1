"""Position ids: the image-only M-RoPE fast path shared by the Qwen-VL generations."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .carriers import Grid, MRope
from .errors import LayoutError


def mrope_image_only(
    input_len: int,
    items: Sequence[tuple[int, int, Grid]],
    merge_size: int,
) -> MRope:
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
        block = pos[:, start : end + 1].reshape(3, t, gh, gw)
        block[0] = (nxt + np.arange(t, dtype=np.int64))[:, None, None]
        block[1] = (nxt + np.arange(gh, dtype=np.int64))[None, :, None]
        block[2] = (nxt + np.arange(gw, dtype=np.int64))[None, None, :]
        nxt += max(t, gh, gw)
        st = end + 1
    if st < L:
        pos[:, st:] = np.arange(nxt, nxt + L - st, dtype=np.int64)
    top = int(pos.max()) if L else -1
    return MRope(positions=pos, delta=top + 1 - L)
