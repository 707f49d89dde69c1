"""M-RoPE positions: transformers 5.24's ``get_rope_index``.

:func:`mm_framework.plugin.mrope.image_only` is the fast path for prompts whose media are
all still images (items as spans and grids, docs/families/qwen_vl.md, "Prompt and positions").
:func:`rope_index` covers any mix of images and videos in the three generations
(docs/families/qwen_vl_video.md §7); they differ only in how a video's temporal positions
are spaced and whether a video is one grid or one grid per temporal group:

- Qwen2-VL: temporal position ``i`` for group ``i``;
- Qwen2.5-VL: ``trunc(f32(i) * f32(tokens_per_second * f32(second_per_grid_t)))``;
- Qwen3-VL / Qwen3.5: each temporal group is its own ``[1, h, w]`` grid, consumed by its
  own run of pads.

:func:`rope_index` splits the sequence into maximal runs of one token type (0 text, 1
image, 2 video), as transformers does, and also at every ``run_starts`` index: the pipeline
passes each item's (each Qwen3 temporal group's) first pad, so two items of one type with
nothing between them stay two grids. ``get_rope_index`` reads such a pair as one run, takes
one grid for it and fails (a torch shape error); everywhere else the extra boundaries fall
on type changes and change nothing (docs/families/qwen_vl_video.md §7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mm_framework.plugin import LayoutError, mrope

TEXT, IMAGE, VIDEO = 0, 1, 2

Grid3 = Sequence[int]


def rope_index(
    mm_types: Sequence[int] | np.ndarray,
    image_grids: Sequence[Grid3] = (),
    video_grids: Sequence[Grid3] = (),
    *,
    merge: int,
    tokens_per_second: int | None = None,
    second_per_grid_ts: Sequence[float] | None = None,
    video_groups: bool = False,
    run_starts: Sequence[int] = (),
) -> tuple[np.ndarray, int]:
    """``(positions int64 [3, L], delta)`` of one unpadded sequence.

    ``mm_types``: per token 0 (text), 1 (image pad) or 2 (video pad). ``image_grids`` and
    ``video_grids`` are the ``(t, h, w)`` patch grids in prompt order.
    ``tokens_per_second`` (Qwen2.5-VL) turns on the time-scaled video axis, with one
    ``second_per_grid_ts`` entry per video (``None``: transformers' integer 1 each).
    ``video_groups`` (Qwen3-VL/3.5) splits each video grid into ``t`` grids of ``[1, h, w]``.
    ``run_starts``: indices where a new run begins even when the type does not change (the
    first pad of each grid's run, so adjacent items read as if a zero-length text run parted them).
    :class:`LayoutError` when the runs and the grids do not fit together.
    """
    types = np.asarray(mm_types, dtype=np.int64).reshape(-1)
    n = int(types.size)
    if n == 0:
        raise LayoutError("mrope: empty sequence")
    if ((types < TEXT) | (types > VIDEO)).any():
        raise LayoutError("mrope: token types must be 0 (text), 1 (image) or 2 (video)")
    videos = [tuple(int(v) for v in g) for g in video_grids]
    scales: list[object] = [None] * len(videos)
    if tokens_per_second is not None:
        scales = _time_scales(tokens_per_second, second_per_grid_ts, len(videos))
    if video_groups:
        videos = [(1, h, w) for t, h, w in videos for _ in range(t)]
        scales = [None] * len(videos)
    grids = {IMAGE: iter([tuple(int(v) for v in g) for g in image_grids]), VIDEO: iter(zip(videos, scales))}
    pos = np.empty((3, n), dtype=np.int64)
    edges = np.flatnonzero(np.diff(types)) + 1
    if len(run_starts):
        extra = np.asarray(run_starts, dtype=np.int64)
        edges = np.union1d(edges, extra[(extra > 0) & (extra < n)])
    starts = np.concatenate(([0], edges)).tolist()
    ends = np.concatenate((edges, [n])).tolist()
    cur = 0
    for s, e in zip(starts, ends):
        kind = int(types[s])
        if kind == TEXT:
            pos[:, s:e] = np.arange(cur, cur + e - s, dtype=np.int64)
            cur += e - s
            continue
        try:
            item = next(grids[kind])
        except StopIteration:
            name = "image" if kind == IMAGE else "video"
            raise LayoutError(f"mrope: more {name} runs than {name} grids") from None
        (t, h, w), scale = (item, None) if kind == IMAGE else item
        gh, gw = h // merge, w // merge
        if t * gh * gw != e - s:
            raise LayoutError(
                f"mrope: a run of {e - s} vision tokens at {s} but its grid {(t, h, w)} gives {t * gh * gw}"
            )
        mrope.grid_block(pos[:, s:e], cur + _temporal(t, scale), cur, gh, gw)
        cur += max(h, w) // merge
    return pos, int(pos.max()) + 1 - n


def _time_scales(tokens_per_second: int, spg: Sequence[float] | None, count: int) -> list[object]:
    """Per video: the f32 ``tokens_per_second * spg`` (f32 multiply), or an int (no spg)."""
    if spg is None:
        return [int(tokens_per_second)] * count
    if len(spg) < count:
        raise LayoutError(f"mrope: {count} videos but {len(spg)} second_per_grid_ts entries")
    tps = np.float32(tokens_per_second)
    return [np.float32(tps * np.float32(v)) for v in spg[:count]]


def _temporal(t: int, scale: object) -> np.ndarray:
    """Temporal offsets of ``t`` groups: ``(arange(t) * scale).long()`` in torch's dtypes."""
    i = np.arange(t, dtype=np.int64)
    if scale is None:
        return i
    if isinstance(scale, np.float32):
        # int64 arange times a 0-d float32 tensor is computed in float32, then truncated.
        return (i.astype(np.float32) * scale).astype(np.int64)
    return i * int(scale)
