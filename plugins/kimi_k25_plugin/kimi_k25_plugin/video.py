"""One video item of the ``kimi_k25`` family (transformers 5.24's ``Kimi_K25VideoProcessor`` and
``Kimi_K25Processor.replace_video_token``), docs/families/kimi_k25.md §5.

Frames are sampled at ``fps`` (``default_sample_indices_fn``), cut into chunks of
``temporal_patch_size`` frames (the last may be shorter), every frame sized by ``navit_resize``
under the video's own patch budget, resized, zero-padded, normalized and cut into raster patches
exactly as an image; ``video_grid_thw`` has one row ``[frames in chunk, gh, gw]`` per chunk. The
prompt gets, per chunk, ``HH:MM:SS.mmm<|media_begin|>video<|media_content|>`` + ``gh*gw/merge**2``
video tokens + ``<|media_end|>``, the time being the chunk's first frame's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import navit_resize
from .video_spec import KimiVideoSpec

# Kimi_K25Processor writes timestamps at this rate for a clip without one (its logged default).
DEFAULT_FPS = 24


@attrs.frozen
class VideoGrid(mmp.Grid):
    """A video's ``t`` sampled frames of ``h`` x ``w`` patches each (the padded canvas), and
    ``stamps``, the ``HH:MM:SS.mmm`` text of each chunk."""

    stamps: tuple[str, ...] = attrs.field(default=(), converter=tuple)


def sample_indices(total: int, video_fps: float | None, fps: float) -> list[int]:
    """``default_sample_indices_fn`` with ``fps``: ``n = max(1, int(total / video_fps * fps))``
    frames at ``k * total // n``."""
    if video_fps is None:
        raise mmp.MediaError("video: sampling at a frame rate needs the clip's source fps (none was given)")
    n = max(1, int(total / video_fps * fps))
    if n > total:
        raise mmp.MediaError(f"video: sampling {fps} fps from a {total}-frame clip at {video_fps} fps asks for {n} "
                             f"frames, more than the clip has (transformers refuses it)")
    return [k * total // n for k in range(n)]


def stamp(seconds: float) -> str:
    """``replace_video_token``'s timestamp text, in its very expression."""
    return time.strftime("%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}"


def chunk_stamps(indices: Sequence[int], fps: float | None, tps: int) -> tuple[str, ...]:
    """The timestamp of each chunk: its first frame's index over the source rate (24 when unknown)."""
    rate = DEFAULT_FPS if fps is None else fps
    return tuple(stamp(float(indices[k] / rate)) for k in range(0, len(indices), tps))


class KimiVideo:
    """A spec's video processor; immutable after construction, so thread-safe."""

    def __init__(self, video: KimiVideoSpec, patch_size: int, merge_size: int, norm: kernels.ChannelNorm) -> None:
        self.video, self.patch, self.merge, self.norm = video, patch_size, merge_size, norm

    def sample(self, total: int, fps: float | None) -> list[int] | None:
        return sample_indices(total, fps, self.video.fps) if self.video.sample_frames else None

    def sizes(self, width: int, height: int) -> tuple[tuple[int, int], tuple[int, int]]:
        v = self.video
        return navit_resize(height, width, self.patch, self.merge, v.max_patches, v.max_size_per_side)

    def geometry(self, indices: Sequence[int], fps: float | None, width: int, height: int) -> VideoGrid:
        _, (ph, pw) = self.sizes(width, height)
        return VideoGrid(len(indices), ph // self.patch, pw // self.patch,
                         chunk_stamps(indices, fps, self.video.temporal_patch_size))

    def plan(self, header: mmp.ClipHeader) -> mmp.ItemPlan:
        indices = self.sample(header.total_frames, header.fps)
        grid = self.geometry(range(header.total_frames) if indices is None else indices, header.fps, header.width,
                             header.height)
        return mmp.ItemPlan(grid, (grid.w * self.patch, grid.h * self.patch))

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        """``pixel_values_videos`` ``[t*gh*gw, 3, P, P]`` (frame by frame, raster patches) and the
        aux ``video_thw`` ``[t, gh, gw]`` (the model's per-chunk rows come from it)."""
        p = self.patch
        (rh, rw), (ph, pw) = self.sizes(clip.width, clip.height)
        grid = self.geometry(clip.indices, clip.fps, clip.width, clip.height)
        canvas = np.zeros((ph, pw, 3), dtype=np.uint8)
        out = np.empty((grid.t, grid.h * grid.w, 3 * p * p), dtype=np.float32)
        for k, frame in enumerate(clip.frames):
            if (rh, rw) != frame.shape[:2]:
                frame = kernels.resize_rgb(frame, rw, rh, self.video.resizer)
            canvas[:rh, :rw] = frame
            out[k] = kernels.patchify_merged_blocks(canvas, p, 1, 1, self.norm)
        feature = out.reshape(grid.t * grid.h * grid.w, 3, p, p)
        return mmp.ProcessedItem(feature=mmp.Tensor(feature, "f32"),
                                 aux={"video_thw": mmp.Tensor.i64([grid.t, grid.h, grid.w])},
                                 geometry=grid, size=(pw, ph))

    # -- prompt -------------------------------------------------------------------

    def chunk_tokens(self, grid: VideoGrid) -> int:
        return grid.h * grid.w // self.merge**2

    def chunk_rows(self, grid: mmp.Grid) -> list[list[int]]:
        """``video_grid_thw`` rows of a video: ``[frames in chunk, gh, gw]`` per chunk."""
        tps = self.video.temporal_patch_size
        return [[min(tps, grid.t - k), grid.h, grid.w] for k in range(0, grid.t, tps)]

    def text(self, grid: VideoGrid) -> str:
        """What ``replace_video_token`` writes for the video's placeholder."""
        pads = "<|kimi_k25_video_placeholder|>" * self.chunk_tokens(grid)
        return "".join(f"{s}<|media_begin|>video<|media_content|>{pads}<|media_end|>" for s in grid.stamps)

    def pattern(self, grid: VideoGrid) -> mmp.Explicit:
        """:meth:`text` in ids; the span runs from the first video token to the last (the first
        timestamp with its markers and the last ``<|media_end|>`` stay outside it)."""
        v = self.video
        if v.text_ids is None:
            raise mmp.UnsupportedError(
                "kimi_k25: a video's prompt holds timestamp text whose ids only the Kimi tokenizer knows; give the "
                "spec's video_text_token_ids (kimi_k25_plugin.video_text_token_ids(tokenizer.encode) builds it)")
        word = [*v.text_ids["video"]]
        pads = [v.video_token_id] * self.chunk_tokens(grid)
        ids: list[int] = []
        start = 0
        for k, s in enumerate(grid.stamps):
            ids += self.stamp_ids(s) + [v.media_begin_token_id, *word, v.media_content_token_id]
            if k == 0:
                start = len(ids)
            ids += pads + [v.media_end_token_id]
        return mmp.Explicit(ids, start, len(ids) - 1)

    def stamp_ids(self, text: str) -> list[int]:
        """The ids of ``HH:MM:SS.mmm``: its pieces (two-digit, ``:``, ``.``, three-digit) one by one."""
        table = self.video.text_ids
        if table is None:
            raise mmp.InternalError("kimi_k25: timestamp ids without video_text_token_ids")
        out: list[int] = []
        for piece in (text[0:2], ":", text[3:5], ":", text[6:8], ".", text[9:12]):
            out += table[piece]
        return out
