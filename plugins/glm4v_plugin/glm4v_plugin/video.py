"""GLM-4V video items: transformers 5.24's ``Glm4vVideoProcessor`` / ``Glm46VVideoProcessor``
and the processors' ``replace_video_token`` (docs/families/glm4v.md §7).

Frames are sampled by the variant's rule (:func:`sample_glm4v`, :func:`sample_glm46v`),
sized by GLM's ``smart_resize`` over the sampled frame count, and cut into temporal
patches by the shared ``mmp.video_patches`` path (the video processors exist only on the
torchvision backend, so whatever the image backend, frames take ``aten_u8`` and the fused
normalization). A video expands to one block per temporal patch: ``<|begin_of_image|>``,
the frame's ``<|image|>`` tokens, ``<|end_of_image|>`` and its timestamp as text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .sizing import target_hw
from .spec import Glm4vSpec

# The processors' fps for a clip without one (only the prompt's timestamps; sampling refuses it).
DEFAULT_FPS = 24
# Glm46VVideoProcessor.sample_frames' constants.
GLM46V_FPS = ((30, 3), (300, 1), (2400, 0.5))
GLM46V_MAX_FRAMES = 640
GLM46V_MAX_DURATION = 2400


def _unique_even(indices: Sequence[int]) -> list[int]:
    # Both samplers drop repeats (first kept) and then repeat the last to an even count.
    seen: set[int] = set()
    out = [int(i) for i in indices if not (int(i) in seen or seen.add(int(i)))]
    if len(out) & 1:
        out.append(out[-1])
    return out


def clip_duration(total: int, fps: float, duration: float | None) -> float:
    """The samplers' ``metadata.duration or round((total - 1) / fps) + 1``: an encoded clip's
    header gives PyAV's ``total / fps``; frames the caller decoded have none."""
    return duration or round((total - 1) / fps) + 1


def sample_glm4v(total: int, fps: float, *, target_fps: float, max_duration: int,
                 duration: float | None = None) -> list[int]:
    """``Glm4vVideoProcessor.sample_frames``."""
    last = total - 1
    duration = clip_duration(total, fps, duration)
    if duration <= max_duration:
        n = max(int(math.floor(duration * target_fps)), 1)
        indices = [min(last, int(math.ceil(i * fps / target_fps))) for i in range(n)]
    else:
        n = int(max_duration * target_fps)
        if n >= total:
            indices = list(range(total))
        else:
            indices = [min(last, int(math.ceil(t * fps))) for t in np.linspace(0, duration, n, endpoint=True)]
    return _unique_even(indices)


def sample_glm46v(total: int, fps: float, *, temporal_patch_size: int, duration: float | None = None) -> list[int]:
    """``Glm46VVideoProcessor.sample_frames``: a rate by duration (3, 1 or 0.5 fps times the
    temporal patch), at most 640 frames, seconds walked on the source timestamps."""
    duration = clip_duration(total, fps, duration)
    effective = min(duration, GLM46V_MAX_DURATION)
    rate = next((r for bound, r in GLM46V_FPS if effective <= bound), GLM46V_FPS[-1][1])
    extract = min(int(effective * rate * temporal_patch_size), GLM46V_MAX_FRAMES)
    per_frame = 1 / fps
    max_second = int(duration)
    if total < extract:
        indices = np.linspace(0, total - 1, extract, dtype=int).tolist()
    else:
        indices, current = [], 0
        step = 1 / (temporal_patch_size * rate)
        for k in range(total):
            if k * per_frame >= current:
                current += step
                indices.append(k)
                if current >= max_second:
                    break
    if len(indices) < extract:
        start, end = (indices[0], indices[-1]) if indices else (0, max(total - 1, 0))
        indices = np.linspace(start, end, extract, dtype=int).tolist()
    elif len(indices) > extract:
        indices = np.linspace(0, total - 1, extract, dtype=int).tolist()
    if not indices:
        raise mmp.MediaError(f"video: a clip of {total} frame(s) at {fps} fps gives GLM-4.6V's sampler no frame")
    return _unique_even(indices)


def frame_size(num_frames: int, height: int, width: int, spec: Glm4vSpec) -> tuple[int, int]:
    """The video processor's ``smart_resize(num_frames, h, w, temporal_patch_size, factor,
    video_min_pixels, video_max_pixels)``: GLM's, which counts ``round(t / tps) * tps``
    frames against the bounds and ``t`` in ``beta``."""
    tps = spec.temporal_patch_size
    if num_frames < tps:
        raise mmp.MediaError(f"video: t:{num_frames} must be larger than temporal_factor:{tps}")
    return target_hw(height, width, spec.factor, spec.video_min_pixels, spec.video_max_pixels,
                     temporal=round(num_frames / tps) * tps, frames=num_frames)


def timestamp_text(seconds: float, variant: str) -> str:
    """``replace_frame_token_id``'s text after ``<|end_of_image|>``."""
    return f"{seconds:.1f} seconds" if variant == "glm46v" else str(int(seconds))


def timestamp_texts(variant: str, max_seconds: int) -> list[str]:
    """Every timestamp text a clip of at most ``max_seconds`` can give: the keys of a
    ``video_timestamp_ids`` table, which a deployer encodes with the model's tokenizer
    (``{t: tokenizer.encode(t, add_special_tokens=False) for t in timestamp_texts(...)}``).
    GLM-4.6V's ``.1f`` of any time is one of the tenths ``k / 10`` formatted alike."""
    if variant == "glm46v":
        return [f"{k / 10:.1f} seconds" for k in range(10 * max_seconds + 1)]
    return [str(k) for k in range(max_seconds + 1)]


@attrs.frozen
class VideoGrid(mmp.Grid):
    """A video's ``video_grid_thw`` plus the timestamp text of each temporal patch."""

    stamps: tuple[str, ...] = attrs.field(default=(), converter=tuple)


class Glm4vVideo:
    """A spec's video processor; immutable after construction, so thread-safe."""

    def __init__(self, spec: Glm4vSpec) -> None:
        self.spec = spec
        self.pixels = mmp.PatchPixels.of(spec.pixels, kernels.channel_norm_fused(spec.image_mean, spec.image_std),
                                         spec.temporal_patch_size * spec.patch_size**2)
        self.vocab = None if spec.video_timestamp_ids is None else dict(spec.video_timestamp_ids)

    def sample(self, header: mmp.ClipHeader) -> list[int]:
        s, total, fps = self.spec, header.total_frames, header.fps
        if not s.video_sample_frames:
            return list(range(total))
        if fps is None:
            raise mmp.MediaError("video: GLM-4V samples frames per second and needs the clip's fps (none was given)")
        if s.video_variant == "glm46v":
            return sample_glm46v(total, fps, temporal_patch_size=s.temporal_patch_size, duration=header.duration)
        return sample_glm4v(total, fps, target_fps=s.video_fps, max_duration=s.video_max_duration,
                            duration=header.duration)

    def geometry(self, indices: Sequence[int], fps: float | None, height: int, width: int
                 ) -> tuple[VideoGrid, tuple[int, int]]:
        s = self.spec
        th, tw = frame_size(len(indices), height, width, s)
        t, gh, gw = mmp.video_patches.grid(len(indices), th, tw, patch_size=s.patch_size,
                                           temporal_patch_size=s.temporal_patch_size)
        # replace_video_token: the sampled frames' times (fps 24 when unknown), every second
        # one, cut or padded (with the last, or 0) to the temporal patch count.
        rate = DEFAULT_FPS if fps is None else fps
        times = [i / rate for i in indices][::2][:t]
        times += [times[-1] if times else 0] * (t - len(times))
        return VideoGrid(t, gh, gw, [timestamp_text(x, s.video_variant) for x in times]), (tw, th)

    def plan(self, header: mmp.ClipHeader) -> mmp.ItemPlan:
        indices = self.sample(header)
        grid, size = self.geometry(indices, header.fps, header.height, header.width)
        return mmp.ItemPlan(grid, size)

    def process(self, clip: mmp.VideoClip) -> mmp.ProcessedItem:
        s = self.spec
        grid, (tw, th) = self.geometry(clip.indices, clip.fps, clip.height, clip.width)
        pixels = mmp.video_patches.pixel_values(clip.frames, th, tw, patch_size=s.patch_size, merge_size=s.merge_size,
                                                temporal_patch_size=s.temporal_patch_size,
                                                norm=self.pixels.kernel_norm)
        return mmp.ProcessedItem(feature=self.pixels.tensor(pixels),
                                 aux={"video_grid_thw": mmp.Tensor.i64([grid.t, grid.h, grid.w])},
                                 geometry=grid, size=(tw, th))

    # -- prompt -------------------------------------------------------------------

    def frame_tokens(self, grid: VideoGrid) -> int:
        return grid.h * grid.w // self.spec.merge_size**2

    def stamp_ids(self, text: str) -> tuple[int, ...]:
        if self.vocab is None:
            raise mmp.UnsupportedError(
                "glm4v: a video's prompt holds its frame timestamps as text, whose ids only the model's tokenizer "
                "knows: set the spec's video_timestamp_ids (docs/families/glm4v.md §7)")
        ids = self.vocab.get(text)
        if ids is None:
            raise mmp.UnsupportedError(f"glm4v: the video timestamp {text!r} is not in the spec's video_timestamp_ids")
        return ids

    def pattern(self, grid: VideoGrid) -> mmp.Explicit:
        """What one ``<|video|>`` becomes; the item's span runs from the first ``<|image|>``
        to the last timestamp token (the first ``<|begin_of_image|>`` stays outside)."""
        s = self.spec
        pads = [s.image_token_id] * self.frame_tokens(grid)
        ids: list[int] = []
        for text in grid.stamps:
            ids += [s.image_start_token_id, *pads, s.image_end_token_id, *self.stamp_ids(text)]
        return mmp.Explicit(ids, 1, len(ids))

    def pad_runs(self, grid: VideoGrid) -> list[int]:
        """Offset of each frame's run of ``<|image|>`` inside the item's span."""
        runs, at = [], 0
        for text in grid.stamps:
            runs.append(at)
            at += self.frame_tokens(grid) + 2 + len(self.stamp_ids(text))
        return runs

    def text(self, grid: VideoGrid) -> str:
        """``replace_video_token``'s text, for ``mm_expansion_text``."""
        pads = "<|image|>" * self.frame_tokens(grid)
        return "".join(f"<|begin_of_image|>{pads}<|end_of_image|>{t}" for t in grid.stamps)
