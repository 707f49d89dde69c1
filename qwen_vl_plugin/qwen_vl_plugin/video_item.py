"""One video item of the ``qwen_vl`` family: which frames, what geometry, which tensors.

:class:`QwenVideo` binds a spec's video settings once (the sampler's parameters, the
fused normalization) and then answers per clip, purely, for any thread: the frames to
decode (``mm_sample_frames``), the geometry decided without pixels (``mm_plan_item``,
token counts) and the processed item (``mm_process_item``). The geometry of a clip is a
:class:`VideoGrid`, which also carries what the prompt and the positions need beyond
the patch grid, so that processing and planning give the same value and the layout and
position hooks (which see only geometries) need nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from mm_framework import plugin as mmp

from .spec import QwenVlSpec
from .video import qwen2_frame_size, qwen3_frame_size, second_per_grid_t, video_norm
from .video_prompt import group_timestamps, qwen2_video_tokens, qwen3_video_ids
from .video_sampling import qwen2_sample_indices, qwen3_sample_indices


@attrs.frozen
class VideoGrid(mmp.Grid):
    """A video's ``video_grid_thw`` (``t`` temporal patches of ``h`` x ``w`` patches), plus
    ``timestamps``, the seconds of each temporal patch (Qwen3/3.5's ``<t seconds>``
    prompt text, docs/families/qwen_vl_video.md §5), and ``second_per_grid_t``,
    Qwen2.5-VL's ``second_per_grid_ts`` entry (the float32 value, §6)."""

    timestamps: tuple[float, ...] = attrs.field(default=(), converter=tuple)
    second_per_grid_t: float | None = None


class QwenVideo:
    """A spec's video processor; immutable after construction, so thread-safe."""

    def __init__(self, spec: QwenVlSpec) -> None:
        if spec.video is None:
            raise mmp.InternalError("qwen_vl: a video processor for a spec without video fields")
        self.spec = spec
        self.video = spec.video
        self._pixels = mmp.PatchPixels.of(spec.pixels, video_norm(spec.image_mean, spec.image_std),
                                          spec.temporal_patch_size * spec.patch_size**2)

    # -- frames and geometry ------------------------------------------------------

    def sample(self, total: int, fps: float | None) -> list[int] | None:
        """Source frame indices the video processor keeps (None: every frame), §3."""
        v, s = self.video, self.spec
        if not v.sample_frames:
            return None
        if v.qwen3:
            return qwen3_sample_indices(total, fps, fps=v.fps, min_frames=v.min_frames, max_frames=v.max_frames)[0]
        return qwen2_sample_indices(total, fps, fps=v.fps, min_frames=v.min_frames, max_frames=v.max_frames,
                                    temporal_patch_size=s.temporal_patch_size)

    def frame_size(self, num_frames: int, height: int, width: int) -> tuple[int, int]:
        """``(height, width)`` every frame is resized to, §4."""
        v, s = self.video, self.spec
        if v.qwen3:
            return qwen3_frame_size(num_frames, height, width, factor=s.factor, temporal_factor=s.temporal_patch_size,
                                    min_pixels=v.min_pixels, max_pixels=v.max_pixels)
        return qwen2_frame_size(height, width, factor=s.factor, min_pixels=v.min_pixels, max_pixels=v.max_pixels)

    def geometry(
        self, indices: Sequence[int], total: int, fps: float | None, height: int, width: int
    ) -> tuple[VideoGrid, tuple[int, int]]:
        """The :class:`VideoGrid` of the frames ``indices`` of a ``total``-frame clip at
        ``fps`` (``None``: unknown), and the ``(width, height)`` they are processed at."""
        v, s = self.video, self.spec
        th, tw = self.frame_size(len(indices), height, width)
        t, gh, gw = mmp.video_patches.grid(len(indices), th, tw, patch_size=s.patch_size,
                                           temporal_patch_size=s.temporal_patch_size)
        times = group_timestamps(indices, fps, s.temporal_patch_size) if v.qwen3 else ()
        spg = None
        if v.tokens_per_second is not None:
            spg = float(second_per_grid_t(len(indices), total, fps, s.temporal_patch_size))
        return VideoGrid(t, gh, gw, times, spg), (tw, th)

    def plan(self, width: int, height: int, frames: int, fps: float | None) -> mmp.ItemPlan:
        """What :meth:`process` makes of a clip of ``frames`` source frames, without pixels."""
        indices = self.sample(frames, fps)
        grid, size = self.geometry(range(frames) if indices is None else indices, frames, fps, height, width)
        return mmp.ItemPlan(grid, size)

    # -- pixels -------------------------------------------------------------------

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        """``pixel_values_videos`` of the clip's chosen frames, ``video_grid_thw`` and, for
        Qwen2.5-VL, ``second_per_grid_ts`` (``[1]`` f32) as aux."""
        s = self.spec
        grid, (tw, th) = self.geometry(clip.indices, clip.total_frames, clip.fps, clip.height, clip.width)
        pixels = mmp.video_patches.pixel_values(clip.frames, th, tw, patch_size=s.patch_size, merge_size=s.merge_size,
                                    temporal_patch_size=s.temporal_patch_size,
                                    norm=self._pixels.kernel_norm)
        aux = {"video_grid_thw": mmp.Tensor.i64([grid.t, grid.h, grid.w])}
        if grid.second_per_grid_t is not None:
            aux["second_per_grid_ts"] = mmp.Tensor.f32(np.asarray([grid.second_per_grid_t], dtype=np.float32))
        return mmp.ProcessedItem(feature=self._pixels.tensor(pixels), aux=aux, geometry=grid, size=(tw, th))

    # -- prompt -------------------------------------------------------------------

    def pattern(self, grid: VideoGrid) -> mmp.Repeat | mmp.Explicit:
        """What one ``<|video_pad|>`` becomes (§5). Qwen3/3.5: the whole per-group text, the
        span running from the first pad to the last (the first timestamp with its
        ``<|vision_start|>`` and the closing ``<|vision_end|>`` stay outside it)."""
        v, merge = self.video, self.spec.merge_size
        if not v.qwen3:
            return mmp.Repeat(v.token_id, qwen2_video_tokens((grid.t, grid.h, grid.w), merge))
        ids = qwen3_video_ids((grid.t, grid.h, grid.w), grid.timestamps, video_token_id=v.token_id,
                              vision_start_id=v.vision_start_token_id, vision_end_id=v.vision_end_token_id,
                              vocab=v.timestamps, merge=merge)
        return mmp.Explicit(ids, len(v.timestamps.ids(grid.timestamps[0])) + 1, len(ids) - 1)

    def pad_runs(self, grid: VideoGrid) -> list[tuple[int, int]]:
        """``(offset, length)`` of each run of pads inside the item's span: one for
        Qwen2/2.5; one per temporal patch for Qwen3/3.5, each separated from the next by
        ``<|vision_end|>``, the next timestamp and ``<|vision_start|>``."""
        per_group = grid.h * grid.w // self.spec.merge_size**2
        if not self.video.qwen3:
            return [(0, grid.t * per_group)]
        runs, at = [], 0
        for k in range(grid.t):
            runs.append((at, per_group))
            if k + 1 < grid.t:
                at += per_group + 2 + len(self.video.timestamps.ids(grid.timestamps[k + 1]))
        return runs

    def span_tokens(self, grid: VideoGrid) -> int:
        """The length of the item's span (:meth:`pattern`), what ``num_media_tokens`` gives."""
        offset, length = self.pad_runs(grid)[-1]
        return offset + length
