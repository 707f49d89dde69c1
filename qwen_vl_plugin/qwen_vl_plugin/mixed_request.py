"""The prompt, positions and model inputs of a ``qwen_vl`` request that holds videos.

transformers' processors replace the *n*-th ``<|image_pad|>`` with the *n*-th image and
the *n*-th ``<|video_pad|>`` with the *n*-th video, each modality counted on its own
(docs/families/qwen_vl_video.md §5); ``get_rope_index`` then walks the expanded prompt's
runs of text, image and video tokens (§7). Requests with images only keep the image
path of :mod:`.family` (``layout_by_placeholder``, ``mmp.mrope.image_only``), which gives
the same result for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp

from .mrope import IMAGE, TEXT, VIDEO, rope_index
from .video_item import QwenVideo, VideoGrid


def layout(
    input_ids: np.ndarray, grids: Sequence[mmp.Grid], modalities: Sequence[str], image_tokens: Any, video: QwenVideo
) -> mmp.TokenLayout:
    """Every placeholder of either modality replaced by its item, in prompt order.

    ``image_tokens(grid)`` is an image's pad count. A placeholder count that differs
    from the item count of its modality is a :class:`LayoutError` naming both.
    """
    ids = {"image": video.spec.image_token_id, "video": video.video.token_id}

    def pattern(item: int) -> Any:
        grid = grids[item]
        if modalities[item] == "image":
            return mmp.Repeat(ids["image"], image_tokens(grid))
        return video.pattern(_video_grid(grid))

    return mmp.layout_by_placeholders(input_ids, ids, modalities, pattern)


def positions(
    input_len: int, offsets: Sequence[tuple[int, int]], grids: Sequence[mmp.Grid], modalities: Sequence[str],
    video: QwenVideo,
) -> mmp.MRope:
    """``get_rope_index`` of the expanded prompt: its token types rebuilt from the item spans
    (an image's span is all pads; a video's pad runs come from :meth:`QwenVideo.pad_runs`),
    each item's pad run its own run even when another of its type ends right before it."""
    types = np.full(input_len, TEXT, dtype=np.int64)
    image_grids, video_grids, spg, run_starts = [], [], [], []
    for i in sorted(range(len(offsets)), key=lambda k: offsets[k][0]):
        start, end = offsets[i]
        grid = grids[i]
        if modalities[i] == "image":
            types[start : end + 1] = IMAGE
            image_grids.append((grid.t, grid.h, grid.w))
            run_starts.append(start)
            continue
        grid = _video_grid(grid)
        for offset, length in video.pad_runs(grid):
            types[start + offset : start + offset + length] = VIDEO
            run_starts.append(start + offset)
        video_grids.append((grid.t, grid.h, grid.w))
        spg.append(grid.second_per_grid_t)
    v = video.video
    pos, delta = rope_index(
        types, image_grids, video_grids, merge=video.spec.merge_size, tokens_per_second=v.tokens_per_second,
        second_per_grid_ts=spg if v.tokens_per_second is not None else None, video_groups=v.qwen3,
        run_starts=run_starts,
    )
    return mmp.MRope(pos, delta)


def model_kwargs(items: Sequence[mmp.OutputItem], dim: int, pixels: type = np.float32) -> dict[str, np.ndarray]:
    """The models' keyword tensors, images and videos each in prompt order: ``pixel_values``
    and ``image_grid_thw`` when there are images (or no items at all),
    ``pixel_values_videos``, ``video_grid_thw`` and, for Qwen2.5-VL, ``second_per_grid_ts``
    (f32 ``[n]``) when there are videos. ``dim`` is ``3 * tps * ps * ps``; ``pixels`` the
    patches' dtype (an empty request's too)."""
    images = [it for it in items if it.modality == "image"]
    videos = [it for it in items if it.modality == "video"]
    out: dict[str, np.ndarray] = {}
    if images or not videos:
        out["pixel_values"] = mmp.joined([it.feature.array for it in images], np.zeros((0, dim), dtype=pixels))
        out["image_grid_thw"] = _stack([it.aux["image_grid_thw"].array for it in images])
    if videos:
        out["pixel_values_videos"] = mmp.joined([it.feature.array for it in videos], np.zeros((0, dim), dtype=pixels))
        out["video_grid_thw"] = _stack([it.aux["video_grid_thw"].array for it in videos])
        if "second_per_grid_ts" in videos[0].aux:
            out["second_per_grid_ts"] = mmp.joined([it.aux["second_per_grid_ts"].array for it in videos],
                                                   np.zeros((0,), dtype=np.float32))
    return out


def _stack(arrays: list[np.ndarray]) -> np.ndarray:
    return np.stack(arrays) if arrays else np.zeros((0, 3), dtype=np.int64)


def _video_grid(geometry: Any) -> VideoGrid:
    if not isinstance(geometry, VideoGrid):
        raise mmp.InternalError(f"qwen_vl: expected a VideoGrid geometry for a video, got {type(geometry).__name__}")
    return geometry
