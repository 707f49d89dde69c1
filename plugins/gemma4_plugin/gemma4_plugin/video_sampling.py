"""Which frames of a clip ``Gemma4VideoProcessor`` keeps, and their timestamps (transformers 5.24, exact).

Gemma 4 has no sampler of its own: ``BaseVideoProcessor.sample_frames`` calls
``default_sample_indices_fn`` with the processor's ``num_frames`` (32) or ``fps`` (unset),
which are mutually exclusive (docs/families/gemma4.md §5). Where transformers raises for a
clip, these raise :class:`MediaError`.
"""

from __future__ import annotations

from collections.abc import Sequence

from mm_framework.plugin import MediaError

# Gemma4Processor.replace_video_token's rate for a clip that came without one.
DEFAULT_FPS = 24


def sample_indices(total: int, video_fps: float | None, *, num_frames: int | None, fps: float | None) -> list[int]:
    """``default_sample_indices_fn``: ``num_frames`` (or ``max(1, int(total / video_fps * fps))``)
    evenly spaced source frames ``k * total // n``; every frame when neither is set."""
    if fps is not None and num_frames is None:
        if video_fps is None:
            raise MediaError(f"video: sampling at {fps} fps needs the clip's source frame rate (none was given)")
        num_frames = max(1, int(total / video_fps * fps))
    if num_frames is None:
        return list(range(total))
    if num_frames > total:
        raise MediaError(f"video: cannot sample {num_frames} frames from a clip of {total} frame(s) "
                         "(transformers refuses it too)")
    return [k * total // num_frames for k in range(num_frames)]


def timestamps(indices: Sequence[int], fps: float | None) -> tuple[float, ...]:
    """``VideoMetadata.timestamps``: each kept frame's source index over the source rate (24 when unknown)."""
    rate = DEFAULT_FPS if fps is None else fps
    return tuple(int(i) / rate for i in indices)
