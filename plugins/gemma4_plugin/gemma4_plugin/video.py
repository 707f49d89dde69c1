"""One video item of the ``gemma4`` family (transformers 5.24's ``Gemma4VideoProcessor``).

Per clip (docs/families/gemma4.md §5): the kept frames (:mod:`.video_sampling`) are resized
together, aspect ratio kept, to the still-image target size of the video budget
(``video_max_soft_tokens``; no resize when the frames have it) with torchvision's uint8
antialiased filter, rescaled and normalized with torchvision's fused arithmetic, and cut
into the same patches as an image. The feature is float32 ``[frames, video_max_patches,
patch_size**2 * 3]``; the geometry a :class:`VideoGrid` (frames x patch rows x patch
columns, plus each frame's timestamp, which the prompt needs).
"""

from __future__ import annotations

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .patches import PatchWriter
from .sizing import target_size
from .spec import Gemma4Spec
from .video_prompt import TimestampIds, expansion_text
from .video_sampling import sample_indices, timestamps

# Gemma4Processor's video_token (added to the tokenizer by the processor itself).
VIDEO_TOKEN = "<|video|>"
# The video processor's options a request may set per item, and the spec field each replaces.
VIDEO_OPTIONS = {"max_soft_tokens": "video_max_soft_tokens", "num_frames": "video_num_frames", "fps": "video_fps",
                 "do_sample_frames": "video_do_sample_frames"}


def video_norm(spec: Gemma4Spec) -> kernels.ChannelNorm:
    """``rescale_and_normalize`` of the torchvision video processor: the fused arithmetic."""
    return kernels.channel_norm_steps("fused", spec.video_image_mean, spec.video_image_std, spec.video_rescale_factor,
                                      do_rescale=spec.video_do_rescale, do_normalize=spec.video_do_normalize)


@attrs.frozen
class VideoGrid(mmp.Grid):
    """``t`` frames of ``h`` x ``w`` patches each, and each frame's timestamp in seconds."""

    timestamps: tuple[float, ...] = attrs.field(default=(), converter=tuple)


class Gemma4Video:
    """A spec's video processor; immutable after construction, so thread-safe."""

    def __init__(self, spec: Gemma4Spec, write: PatchWriter) -> None:
        self.spec = spec
        self._write = write
        self._stamps = TimestampIds(dict(spec.timestamp_token_ids))

    def sample(self, total: int, fps: float | None) -> list[int] | None:
        """Source frames the processor keeps (``None``: every frame)."""
        s = self.spec
        if not s.video_do_sample_frames:
            return None
        return sample_indices(total, fps, num_frames=s.video_num_frames, fps=s.video_fps)

    def geometry(self, indices, fps: float | None, width: int, height: int) -> tuple[VideoGrid, tuple[int, int]]:
        s, p = self.spec, self.spec.patch_size
        th, tw = target_size(height, width, p, s.video_max_patches, s.pooling_kernel_size)
        return VideoGrid(len(indices), th // p, tw // p, timestamps(indices, fps)), (tw, th)

    def plan(self, header: mmp.ClipHeader) -> mmp.ItemPlan:
        indices = self.sample(header.total_frames, header.fps)
        grid, size = self.geometry(range(header.total_frames) if indices is None else indices, header.fps,
                                   header.width, header.height)
        return mmp.ItemPlan(grid, size)

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        s = self.spec
        grid, (tw, th) = self.geometry(clip.indices, clip.fps, clip.width, clip.height)
        feature = np.zeros((grid.t, s.video_max_patches, s.patch_dim), dtype=np.float32)
        same = (clip.height, clip.width) == (th, tw)
        for k in range(grid.t):
            frame = clip.frames[k] if same else kernels.resize_rgb(clip.frames[k], tw, th, s.video_resizer)
            self._write(frame, feature[k])
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=grid, size=(tw, th))

    def soft_tokens(self, grid: mmp.Grid) -> int:
        return grid.h * grid.w // self.spec.pooling_kernel_size**2

    def pattern(self, grid: VideoGrid) -> mmp.Explicit:
        s = self.spec
        ids, start, end = self._stamps.video_ids(grid.timestamps, self.soft_tokens(grid), s.video_token_id,
                                                 s.boi_token_id, s.eoi_token_id)
        return mmp.Explicit(ids, start, end)

    def text(self, grid: VideoGrid, boi: str, eoi: str) -> str:
        return expansion_text(grid.timestamps, self.soft_tokens(grid), VIDEO_TOKEN, boi, eoi)
