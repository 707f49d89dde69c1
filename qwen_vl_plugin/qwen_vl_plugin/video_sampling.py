"""Which frames of a clip the Qwen-VL video processors keep (transformers 5.24, exact).

Two rules, one per processor class (docs/families/qwen_vl_video.md §3): Qwen2-VL and
Qwen2.5-VL share ``Qwen2VLVideoProcessor.sample_frames`` (a float-step ``torch.arange``),
Qwen3-VL and Qwen3.5 share ``Qwen3VLVideoProcessor.sample_frames`` (a half-even
``np.linspace``). Both take the source frame count and frame rate and return source
frame indices. Where transformers raises for a clip, these raise :class:`MediaError`;
parameter combinations it refuses raise :class:`SpecError`.
"""

from __future__ import annotations

import math

import numpy as np

from mm_framework.plugin import MediaError, SpecError

# Qwen3's processor assumes this rate for a clip without one (§3), and its prompt
# timestamps then use it too (§5).
DEFAULT_FPS = 24.0


def qwen2_sample_indices(
    total: int,
    video_fps: float | None,
    *,
    fps: float | None = None,
    num_frames: int | None = None,
    min_frames: int = 4,
    max_frames: int = 768,
    temporal_patch_size: int = 2,
) -> list[int]:
    """``Qwen2VLVideoProcessor.sample_frames`` (used only when ``do_sample_frames``).

    ``num_frames`` is rounded half-even to a multiple of ``temporal_patch_size``;
    ``fps`` gives ``total / video_fps * fps`` clamped to ``[min_frames, max_frames']``
    and ``total``, then floored to a multiple (``max_frames'`` is itself floored to a
    multiple of ``min(max_frames, total)``). The indices are
    ``torch.arange(0, total, total / n).int()``: ``ceil(total / step)`` values (often
    ``n + 1``), value ``i`` being ``trunc(f32(i * step))`` with ``step`` in f64 (§3).
    When the last value rounds up to ``total`` the clip is refused (transformers fails).
    """
    if (fps is None) == (num_frames is None):
        raise SpecError("qwen2 frame sampling needs exactly one of fps and num_frames")
    tps = temporal_patch_size
    if num_frames is not None:
        n: float = round(num_frames / tps) * tps
    else:
        if video_fps is None:
            raise MediaError("video: sampling at a frame rate needs the clip's source fps (none was given)")
        cap = math.floor(min(max_frames, total) / tps) * tps
        n = total / video_fps * fps
        n = min(max(n, min_frames), cap, total)
        n = math.floor(n / tps) * tps
    if n > total:
        raise MediaError(f"video: cannot sample {n} frames from a clip of {total} frames")
    if n <= 0:
        # transformers divides by zero here (a clip shorter than one temporal patch).
        raise MediaError(
            f"video: a clip of {total} frame(s) is too short to sample in multiples of {tps} frames"
        )
    step = total / n
    count = math.ceil(total / step)
    values = (np.arange(count, dtype=np.float64) * step).astype(np.float32)
    indices = [int(v) for v in values.astype(np.int32)]
    if indices[-1] >= total:
        # The extra value can round up to ``total`` in f32 (e.g. 75 frames at 10 fps, fps=2);
        # transformers then fails indexing the clip (§3).
        raise MediaError(
            f"video: frame sampling overshoots: it picks frame {indices[-1]} of a {total}-frame clip "
            f"({n} frames at step {step!r}), which transformers cannot index either"
        )
    return indices


def qwen3_sample_indices(
    total: int,
    video_fps: float | None,
    *,
    fps: float | None = 2.0,
    num_frames: int | None = None,
    min_frames: int = 4,
    max_frames: int = 768,
) -> tuple[list[int], float | None]:
    """``Qwen3VLVideoProcessor.sample_frames`` and the source rate it leaves behind.

    With ``fps``: ``n = int(total / video_fps * fps)`` clamped to ``[min_frames,
    max_frames]`` and ``total`` (a clip without a rate is taken as 24 fps, and the
    returned rate says so, since the prompt timestamps use it). With neither:
    ``n = min(max(total, min_frames), max_frames)``, which may repeat frames. Indices
    are ``np.linspace(0, total - 1, n).round()`` (half-even). Returns ``(indices, rate)``.
    """
    if fps is not None and num_frames is not None:
        raise SpecError("qwen3 frame sampling takes fps or num_frames, not both")
    if num_frames is None and fps is not None:
        if video_fps is None:
            video_fps = DEFAULT_FPS
        n = int(total / video_fps * fps)
        n = min(max(n, min_frames), max_frames, total)
    elif num_frames is None:
        n = min(max(total, min_frames), max_frames)
    else:
        n = num_frames
    if n <= 0:
        raise MediaError(f"video: no frame to sample from a clip of {total} frame(s)")
    indices = np.linspace(0, total - 1, n).round().astype(np.int64)
    return [int(i) for i in indices], video_fps
