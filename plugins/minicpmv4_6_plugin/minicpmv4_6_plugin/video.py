"""Video items of the ``minicpmv4_6`` family: transformers 5.24's ``MiniCPMV4_6VideoProcessor``
with ``stack_frames`` 1 (its default), and ``MiniCPMV4_6Processor.replace_video_token``.

A clip is sampled about one frame per second (:func:`sample_indices`); every sampled frame
is then an image of its own, sliced like one (:mod:`.slicing`) with the video processor's
options, resized on the torchvision path (ATen's uint8 antialiased filter, the video
processor's only backend) and normalized with the fused affine (docs/families/minicpmv4_6.md §6).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .pixels import resized_frames, write_feature
from .slicing import SliceGrid, plan
from .spec import MiniCPMV46Spec

# A clip past this many seconds is "long": its frames are picked on a 0.1 s grid instead.
_TENTHS = 0.1


def sample_indices(total: int, fps: float | None, duration: float | None, max_num_frames: int) -> list[int]:
    """``MiniCPMV4_6VideoProcessor.sample_frames`` with ``stack_frames`` 1: the source frame
    at each whole second (``int(i * fps)`` for ``i < ceil(duration)``); a clip longer than
    ``max_num_frames`` seconds is read on a 0.1 s grid thinned by ``np.linspace`` to
    ``max_num_frames`` frames. Repeats are kept (a clip under 1 fps repeats frames)."""
    if fps is None or duration is None:
        raise mmp.MediaError("video: MiniCPM-V 4.6 samples frames by time and needs the clip's frame rate "
                             "(none was given)")
    if duration > max_num_frames:
        stamps = [round(i * _TENTHS, 1) for i in range(int(duration / _TENTHS))]
        main = [min(int(ts * fps), total - 1) for ts in stamps]
        if len(main) > max_num_frames:
            main = [main[i] for i in np.linspace(0, len(main) - 1, max_num_frames, dtype=int)]
    else:
        main = [int(i * fps) for i in range(math.ceil(duration))]
    if not main or main[-1] >= total:
        # A duration that disagrees with the frame count (or rounds past it); transformers
        # then indexes past the clip too.
        raise mmp.MediaError(f"video: sampling by time picks frames {main[-3:] if main else []} of a "
                             f"{total}-frame clip at {fps} fps lasting {duration} s")
    return main


def clip_duration(header: mmp.ClipHeader) -> float | None:
    """The duration transformers' sampler reads: the container's (``frames / fps``, what its
    pyav loader writes); for decoded frames with a rate, the same ``frames / fps``."""
    if header.duration is not None:
        return header.duration
    return None if header.fps is None else header.total_frames / header.fps


@attrs.frozen
class VideoPlan:
    """A clip's geometry: ``frames`` sampled frames, each planned as ``grid`` (a clip's frames
    share one size, so one grid)."""

    frames: int
    grid: SliceGrid

    @property
    def columns(self) -> int:
        return self.frames * self.grid.columns

    def target_sizes(self) -> list[tuple[int, int]]:
        """``target_sizes_videos`` rows of this clip: per frame its source, then its slices."""
        return self.grid.target_sizes() * self.frames


class MiniCPMVideo:
    """A spec's video processor; immutable after construction, so thread-safe."""

    def __init__(self, spec: MiniCPMV46Spec) -> None:
        if spec.video_token_id is None:
            raise mmp.InternalError("minicpmv4_6: a video processor for a spec without video_token_id")
        self.spec = spec
        self.resizer = kernels.TORCHVISION_RESAMPLERS[spec.resample]
        self._norm = kernels.channel_norm_steps("fused", spec.image_mean, spec.image_std, spec.rescale_factor,
                                                do_rescale=spec.do_rescale, do_normalize=spec.do_normalize)

    def sample(self, header: mmp.ClipHeader) -> list[int]:
        return sample_indices(header.total_frames, header.fps, clip_duration(header), self.spec.video_max_num_frames)

    def grid(self, width: int, height: int) -> SliceGrid:
        s = self.spec
        return plan(height, width, slice_mode=s.video_slice_mode, max_slice_nums=s.video_max_slice_nums,
                    scale_resolution=s.video_scale_resolution, patch=s.patch_size,
                    downsample_mode=s.video_downsample_mode)

    def plan(self, header: mmp.ClipHeader) -> mmp.ItemPlan:
        g = self.grid(header.width, header.height)
        return mmp.ItemPlan(VideoPlan(len(self.sample(header)), g), (g.source[1], g.source[0]))

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        """The clip's columns of ``pixel_values_videos``: per sampled frame its source image,
        then its slices, frames in order."""
        t, h, w = clip.frames.shape[:3]
        g = self.grid(w, h)
        geometry = VideoPlan(t, g)
        feature = np.empty((3, g.patch, geometry.columns), dtype=np.float32)
        for k in range(t):
            write_feature(resized_frames(clip.frames[k], g, self.resizer), g.patch, self._norm,
                          feature[:, :, k * g.columns:(k + 1) * g.columns])
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=geometry, size=(g.source[1], g.source[0]))

    def expansion(self, index: int, frames: int, source: int, per_slice: int, rows: int, cols: int) -> mmp.Explicit:
        """The ids of video ``index`` of the prompt (``replace_video_token`` and
        ``_prepend_local_ids``, videos counted apart from images): ``<image_id>index</image_id>``
        (with ``use_image_id``), then per frame ``<image> vpad*source </image>`` and its slice
        rows as an image's, but with the video pad; nothing between frames. The span runs
        from the first pad to the last."""
        s = self.spec
        vpad = s.video_token_id
        ids: list[int] = []
        if s.use_image_id:
            ids += [s.image_id_start_token_id, *[s.digit_token_ids[int(d)] for d in str(index)],
                    s.image_id_end_token_id]
        start = len(ids) + 1
        frame = [s.image_start_token_id, *[vpad] * source, s.image_end_token_id]
        for r in range(rows):
            if r:
                frame.append(s.newline_token_id)
            for _ in range(cols):
                frame += [s.slice_start_token_id, *[vpad] * per_slice, s.slice_end_token_id]
        ids += frame * frames
        return mmp.Explicit(ids, start, len(ids) - 1)
