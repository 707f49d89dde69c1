"""Video items of the ``smolvlm`` family (transformers 5.24's ``SmolVLMVideoProcessor`` and
``SmolVLMProcessor.replace_video_token``; docs/families/smolvlm.md §7).

Per clip: the kept frames (all, or ``sample_frames``' uniform pick at ``video_fps`` up to
``video_num_frames``, a second trimmed at both ends of long clips), each resized with
torchvision's filter to its longest edge and then to the tile square (videos are never
split), rescaled and normalized with torchvision's fused arithmetic. The feature is
float32 ``[frames, 3, tile, tile]``; the geometry :class:`VideoFrames` also carries what
the prompt text needs (each frame's ``MM:SS`` and the clip's whole seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import longest_edge_size
from .spec import SmolVLMSpec
from .words import cardinal

# SmolVLMProcessor's video_token (the chat template writes it for a video part).
VIDEO = "<video>"
# The video processor's options a request may set per item, and the spec field each replaces.
VIDEO_OPTIONS = {"num_frames": "video_num_frames", "fps": "video_fps", "do_sample_frames": "video_do_sample_frames"}
# sample_frames' skip_secs default: seconds dropped at both ends of a long clip.
SKIP_SECS = 1
# replace_video_token's rate for a clip without one (decoded frames without metadata).
DEFAULT_FPS = 24
INTRO = "You are provided the following series of {frame_count} frames from a {video_duration} [H:MM:SS] video.\n"
FRAME = "\nFrame from {timestamp}:"
OUTRO = "\n\n"


@attrs.frozen
class VideoFrames:
    """A video's kept frames: ``stamps[k]`` is frame ``k``'s ``(minutes, seconds)`` and
    ``seconds`` the clip's whole seconds, as ``replace_video_token`` writes them."""

    stamps: tuple[tuple[int, int], ...] = attrs.field(converter=tuple)
    seconds: int

    @property
    def frames(self) -> int:
        return len(self.stamps)


def sample_indices(total: int, rate: float | None, duration: float | None, *, num_frames: int,
                   fps: float) -> list[int]:
    """``SmolVLMVideoProcessor.sample_frames``: ``min(round(fps * duration), num_frames)``
    (at least 1) frames, ``np.linspace`` over the clip truncated to ints and deduplicated;
    a clip longer than ``2 * SKIP_SECS`` plus ``num_frames / fps`` seconds first loses
    ``SKIP_SECS`` at each end."""
    if rate is None:
        raise mmp.MediaError("smolvlm: sampling a video's frames needs its frame rate (the clip came without one), "
                             "as SmolVLMVideoProcessor does; send it with its fps or without sampling")
    if duration is None:
        duration = total / rate
    desired = max(min(int(round(fps * duration)), num_frames), 1)
    start, end = 0, total - 1
    if duration - 2 * SKIP_SECS > num_frames * fps:
        start, end = int(SKIP_SECS * rate), int(total - SKIP_SECS * rate)
    start, end = max(0, start), min(end, total - 1)
    if start >= end:
        start, end = 0, total - 1
    return [int(i) for i in np.unique(np.linspace(start, end, desired, dtype=int))]


def frames_of(indices: Sequence[int], rate: float | None, total: int) -> VideoFrames:
    """The :class:`VideoFrames` of source frames ``indices`` (``replace_video_token``: a
    clip without a rate is taken at 24 fps, its duration then the last frame's time)."""
    fps = DEFAULT_FPS if rate is None else rate
    times = [i / fps for i in indices]
    seconds = int(total / rate) if rate is not None else int(times[-1])
    return VideoFrames(tuple((int(t // 60), int(t % 60)) for t in times), seconds)


def expansion_text(geometry: VideoFrames, prompt_image: str, frame_count: int | None = None) -> str:
    """``replace_video_token``'s text for a video; ``prompt_image`` is one frame's image
    prompt. ``frame_count`` (the written count) defaults to the video's own frames."""
    text = INTRO.format(frame_count=cardinal(geometry.frames if frame_count is None else frame_count),
                        video_duration=str(timedelta(seconds=geometry.seconds)))
    for minutes, seconds in geometry.stamps:
        text += FRAME.format(timestamp=f"{minutes:02d}:{seconds:02d}") + prompt_image
    return text + OUTRO


class SmolVLMVideo:
    """A spec's video processor; immutable after construction, so thread-safe."""

    def __init__(self, spec: SmolVLMSpec) -> None:
        self.spec = spec
        self._norm = kernels.channel_norm_steps("fused", spec.image_mean, spec.image_std, spec.rescale_factor,
                                                do_rescale=spec.do_rescale, do_normalize=spec.do_normalize)

    def sample(self, header: mmp.ClipHeader) -> list[int] | None:
        """Source frames the processor keeps (``None``: every frame)."""
        s = self.spec
        if not s.video_do_sample_frames:
            return None
        return sample_indices(header.total_frames, header.fps, header.duration, num_frames=s.video_num_frames,
                              fps=s.video_fps)

    def plan(self, header: mmp.ClipHeader) -> mmp.ItemPlan:
        indices = self.sample(header)
        if indices is None:
            indices = list(range(header.total_frames))
        tile = self.spec.max_image_size
        return mmp.ItemPlan(frames_of(indices, header.fps, header.total_frames), (tile, tile))

    def resized(self, frame: np.ndarray) -> np.ndarray:
        """One HWC uint8 frame resized as ``SmolVLMVideoProcessor.resize``: its longest edge,
        then the tile square (each step skipped when the size is unchanged, as tvF.resize)."""
        s, tile = self.spec, self.spec.max_image_size
        for h, w in (longest_edge_size(*frame.shape[:2], s.video_longest_edge), (tile, tile)):
            if frame.shape[:2] != (h, w):
                frame = kernels.resize_rgb(frame, w, h, s.video_resizer)
        return frame

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        tile = self.spec.max_image_size
        feature = np.empty((clip.num_frames, 3, tile, tile), dtype=np.float32)
        for k in range(clip.num_frames):
            self._norm.apply_image(self.resized(clip.frames[k]), feature[k])
        geometry = frames_of(clip.indices, clip.fps, clip.total_frames)
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"), geometry=geometry, size=(tile, tile))


def padded(features: Sequence[np.ndarray], tile: int) -> dict[str, np.ndarray]:
    """The video processor's batch (``do_pad``): ``pixel_values`` float32 ``[videos,
    max_frames, 3, tile, tile]``, shorter videos padded with zero frames, and
    ``pixel_attention_mask`` int64 ``[videos, max_frames, tile, tile]``, all ones: ``pad``
    masks only padded rows and columns, and every frame is one whole tile (the model drops
    the all-zero frames by their pixels)."""
    most = max(len(f) for f in features)
    pv = np.zeros((len(features), most, 3, tile, tile), dtype=np.float32)
    for k, f in enumerate(features):
        pv[k, : len(f)] = f
    return {"pixel_values": pv, "pixel_attention_mask": np.ones((len(features), most, tile, tile), dtype=np.int64)}
