"""Video items of the ``minicpmv4_6`` family: transformers 5.24's ``MiniCPMV4_6VideoProcessor``
and ``MiniCPMV4_6Processor.replace_video_token``.

A clip is sampled about one frame per second (:func:`sample_indices`), plus, with
``stack_frames`` > 1, sub-second frames that are pasted per second onto one canvas
(:func:`composite`). Each resulting *unit* (a main frame or a second's canvas) is then an
image of its own, sliced like one (:mod:`.slicing`) with the video processor's options,
resized on the torchvision path (ATen's uint8 antialiased filter, the video processor's only
backend) and normalized with the fused affine (docs/families/minicpmv4_6.md §6).
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

# A clip past max_num_frames seconds is read on a grid of this step instead of whole seconds.
_TENTHS = 0.1
# concat_frames_as_image's black line between the frames of a second's canvas.
LINE = 6


def sub_timestamps(duration: float, max_num_frames: int, stack_frames: int) -> list[float]:
    """The sub-second times ``sec + j / stack_frames`` (``0 < j < stack_frames``) before the
    end, thinned by ``np.linspace`` to ``max_num_frames * (stack_frames - 1)``."""
    stamps = [sec + j / stack_frames for sec in range(math.ceil(duration)) for j in range(1, stack_frames)
              if sec + j / stack_frames < duration]
    cap = max_num_frames * (stack_frames - 1)
    if len(stamps) > cap:
        stamps = [stamps[i] for i in np.linspace(0, len(stamps) - 1, cap, dtype=int)]
    return stamps


def sample_indices(total: int, fps: float | None, duration: float | None, max_num_frames: int,
                   stack_frames: int = 1) -> list[int]:
    """``MiniCPMV4_6VideoProcessor.sample_frames``: the source frame at each whole second
    (``int(i * fps)`` for ``i < ceil(duration)``); a clip longer than ``max_num_frames``
    seconds is read on a 0.1 s grid thinned by ``np.linspace`` to ``max_num_frames`` frames.
    With ``stack_frames`` > 1 the frames at :func:`sub_timestamps` follow. Repeats are kept
    (a clip under 1 fps repeats frames)."""
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
    if stack_frames > 1:
        main += [min(int(t * fps), total - 1) for t in sub_timestamps(duration, max_num_frames, stack_frames)]
    return main


def units(count: int, duration: float, max_num_frames: int, stack_frames: int) -> list[tuple[int, ...]]:
    """``_preprocess`` stage 1: which of the ``count`` sampled frames make each visual unit,
    in order. Without stacking every frame alone; with it the main frames (all but the last
    ``len(sub_timestamps)``), main frame ``i`` followed by second ``i``'s sub-frames, if any."""
    if stack_frames == 1:
        return [(k,) for k in range(count)]
    stamps = sub_timestamps(duration, max_num_frames, stack_frames)
    n_main = count - len(stamps)
    out: list[tuple[int, ...]] = []
    cursor = 0
    seconds = []
    for sec in range(math.ceil(duration)):
        start = cursor
        while cursor < len(stamps) and stamps[cursor] < sec + 1:
            cursor += 1
        seconds.append(tuple(range(n_main + start, n_main + cursor)))
    for i in range(n_main):
        out.append((i,))
        if i < len(seconds) and seconds[i]:
            out.append(seconds[i])
    return out


def canvas_grid(count: int, height: int, width: int) -> tuple[int, int]:
    """``concat_frames_as_image``'s ``(rows, cols)`` for ``count`` frames of ``height`` x
    ``width``: 2 x 2 for four, the squarer canvas for two or three (two: ties by the frame's
    shape), else one row."""
    def off_square(rows: int, cols: int) -> float:
        w = cols * width + (cols - 1) * LINE
        h = rows * height + (rows - 1) * LINE
        return abs(w / max(1, h) - 1.0)

    if count == 4:
        return 2, 2
    if count == 3:
        return min(((1, 3), (3, 1)), key=lambda rc: off_square(*rc))
    if count == 2:
        a, b = off_square(1, 2), off_square(2, 1)
        if a == b:
            return (1, 2) if width / height >= 1.0 else (2, 1)
        return (1, 2) if a < b else (2, 1)
    return 1, count


def unit_size(count: int, height: int, width: int) -> tuple[int, int]:
    """``(height, width)`` of a unit of ``count`` frames (a lone frame keeps its size)."""
    rows, cols = canvas_grid(count, height, width)
    return rows * height + (rows - 1) * LINE, cols * width + (cols - 1) * LINE


def composite(frames: np.ndarray) -> np.ndarray:
    """``concat_frames_as_image``: HWC ``frames`` [k, h, w, 3] row-major on a black canvas."""
    k, h, w = frames.shape[:3]
    rows, cols = canvas_grid(k, h, w)
    canvas = np.zeros((*unit_size(k, h, w), 3), dtype=np.uint8)
    for i in range(k):
        r, c = divmod(i, cols)
        canvas[r * (h + LINE):r * (h + LINE) + h, c * (w + LINE):c * (w + LINE) + w] = frames[i]
    return canvas


def clip_duration(header: mmp.ClipHeader) -> float | None:
    """The duration transformers' sampler reads: the container's (``frames / fps``, what its
    pyav loader writes); for decoded frames with a rate, the same ``frames / fps``."""
    if header.duration is not None:
        return header.duration
    return None if header.fps is None else header.total_frames / header.fps


@attrs.frozen
class VideoPlan:
    """A clip's geometry: the :class:`~.slicing.SliceGrid` of each visual unit, in order."""

    units: tuple[SliceGrid, ...] = attrs.field(converter=tuple)

    @property
    def columns(self) -> int:
        return sum(g.columns for g in self.units)

    def target_sizes(self) -> list[tuple[int, int]]:
        """``target_sizes_videos`` rows of this clip: per unit its source, then its slices."""
        return [hw for g in self.units for hw in g.target_sizes()]

    def tokens(self) -> tuple[tuple[int, int, int, int], ...]:
        """Per unit ``(source tokens, tokens per slice, rows, cols)``: what the prompt needs."""
        return tuple((g.source_tokens, g.slice_tokens, g.rows, g.cols) for g in self.units)


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
        s = self.spec
        return sample_indices(header.total_frames, header.fps, clip_duration(header), s.video_max_num_frames,
                              s.video_stack_frames)

    def grid(self, width: int, height: int) -> SliceGrid:
        s = self.spec
        return plan(height, width, slice_mode=s.video_slice_mode, max_slice_nums=s.video_max_slice_nums,
                    scale_resolution=s.video_scale_resolution, patch=s.patch_size,
                    downsample_mode=s.video_downsample_mode)

    def _units(self, count: int, total: int, fps: float | None) -> list[tuple[int, ...]]:
        # The grouping needs the duration only with stacking; a VideoClip carries the rate,
        # so both plan and process take frames / fps (see docs §5 on the last ulp).
        s = self.spec
        duration = total / fps if fps else 0.0
        return units(count, duration, s.video_max_num_frames, s.video_stack_frames)

    def geometry(self, groups: list[tuple[int, ...]], height: int, width: int) -> VideoPlan:
        return VideoPlan(self.grid(*reversed(unit_size(len(u), height, width))) for u in groups)

    def plan(self, header: mmp.ClipHeader) -> mmp.ItemPlan:
        groups = self._units(len(self.sample(header)), header.total_frames, header.fps)
        v = self.geometry(groups, header.height, header.width)
        first = v.units[0].source
        return mmp.ItemPlan(v, (first[1], first[0]))

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        """The clip's columns of ``pixel_values_videos``: per unit its source image, then its
        slices, units in order."""
        t, h, w = clip.frames.shape[:3]
        groups = self._units(t, clip.total_frames, clip.fps)
        v = self.geometry(groups, h, w)
        feature = np.empty((3, self.spec.patch_size, v.columns), dtype=np.float32)
        start = 0
        for members, g in zip(groups, v.units, strict=True):
            picture = clip.frames[members[0]] if len(members) == 1 else composite(clip.frames[list(members)])
            write_feature(resized_frames(picture, g, self.resizer), g.patch, self._norm,
                          feature[:, :, start:start + g.columns])
            start += g.columns
        first = v.units[0].source
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=v, size=(first[1], first[0]))

    def expansion(self, index: int, tokens: tuple[tuple[int, int, int, int], ...]) -> mmp.Explicit:
        """The ids of video ``index`` of the prompt (``replace_video_token`` and
        ``_prepend_local_ids``, videos counted apart from images): ``<image_id>index</image_id>``
        (with ``use_image_id``), then per unit ``<image> vpad*source </image>`` and its slice
        rows as an image's, but with the video pad; nothing between units. The span runs
        from the first pad to the last."""
        s = self.spec
        vpad = s.video_token_id
        ids: list[int] = []
        if s.use_image_id:
            ids += [s.image_id_start_token_id, *[s.digit_token_ids[int(d)] for d in str(index)],
                    s.image_id_end_token_id]
        start = len(ids) + 1
        for source, per_slice, rows, cols in tokens:
            ids += [s.image_start_token_id, *[vpad] * source, s.image_end_token_id]
            for r in range(rows):
                if r:
                    ids.append(s.newline_token_id)
                for _ in range(cols):
                    ids += [s.slice_start_token_id, *[vpad] * per_slice, s.slice_end_token_id]
        return mmp.Explicit(ids, start, len(ids) - 1)
