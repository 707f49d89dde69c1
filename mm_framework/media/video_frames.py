"""Video clips the caller already decoded: frames plus optional metadata, as transformers
takes arrays, and the frame selection its video processors apply to them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import check_int
from ..errors import InvalidInputError, MediaError
from .video import VideoClip, check_frame_indices, check_limits, describe_array


def clip_from_frames(
    frames: Any,
    *,
    fps: float | None = None,
    indices: Sequence[int] | None = None,
    total_frames: int | None = None,
    max_frames: int,
    max_pixels: int,
) -> VideoClip:
    """A clip from frames the caller decoded: one ``[T, H, W, 3]`` uint8 array or a
    sequence of ``[H, W, 3]`` uint8 arrays of one size, copied.

    Optional metadata as transformers takes it with arrays: ``fps`` (the source frame
    rate), ``indices`` (the source frame of each frame; then ``total_frames`` is required)
    and ``total_frames``. Without metadata a clip is ``T`` frames ``0..T-1`` at an unknown
    rate, as transformers assumes for bare arrays. Limits as :func:`.video.decode_clip`.
    :class:`InvalidInputError` for a wrong shape, dtype or metadata.
    """
    shape = _frames_shape(frames)
    t, h, w = shape
    check_limits(t, w, h, max_frames=max_frames, max_pixels=max_pixels)
    if fps is not None:
        if isinstance(fps, bool) or not isinstance(fps, numbers.Real) or not math.isfinite(fps) or fps <= 0:
            raise InvalidInputError(f"video: fps must be a positive finite number, got {fps!r}")
        fps = float(fps)
    if indices is None:
        src = tuple(range(t))
        total = t if total_frames is None else check_int(
            total_frames, "video: total_frames", minimum=1, error=InvalidInputError
        )
    else:
        if total_frames is None:
            raise InvalidInputError("video: frame indices need total_frames (the source's frame count)")
        total = check_int(total_frames, "video: total_frames", minimum=1, error=InvalidInputError)
        if len(indices) != t:
            raise InvalidInputError(f"video: {t} frames but {len(indices)} frame indices")
        src = tuple(check_frame_indices(indices, total, error=InvalidInputError))
    out = np.empty((t, h, w, 3), dtype=np.uint8)
    if isinstance(frames, np.ndarray):
        np.copyto(out, frames)
    else:
        for k, frame in enumerate(frames):
            np.copyto(out[k], frame)
    out.flags.writeable = False
    return VideoClip(frames=out, indices=src, total_frames=total, fps=fps)


def select_frames(clip: VideoClip, positions: Sequence[int]) -> VideoClip:
    """``clip.frames[positions]`` with ``indices = positions``: what transformers' video
    processors do when they sample an array clip (they index the array and overwrite
    ``frames_indices`` with the positions). :class:`MediaError` for a position past the
    clip, where transformers would raise ``IndexError``.
    """
    pos = check_frame_indices(positions, clip.num_frames, error=MediaError, what="clip frame")
    frames = np.ascontiguousarray(clip.frames[pos])
    frames.flags.writeable = False
    return VideoClip(frames=frames, indices=tuple(pos), total_frames=clip.total_frames, fps=clip.fps)


def _frames_shape(frames: Any) -> tuple[int, int, int]:
    if isinstance(frames, np.ndarray):
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
            raise InvalidInputError(f"video: frames must be uint8 [T, H, W, 3], got {describe_array(frames)}")
        shape = frames.shape[:3]
    elif isinstance(frames, Sequence) and not isinstance(frames, (str, bytes)):
        if not frames:
            raise InvalidInputError("video: no frames")
        first = frames[0]
        for k, f in enumerate(frames):
            if not (isinstance(f, np.ndarray) and f.dtype == np.uint8 and f.ndim == 3 and f.shape[2] == 3):
                raise InvalidInputError(f"video: frame {k} must be a uint8 [H, W, 3] array, got {describe_array(f)}")
            if f.shape != first.shape:
                raise InvalidInputError(f"video: frame {k} is {f.shape[:2]}, frame 0 is {first.shape[:2]}")
        shape = (len(frames), *first.shape[:2])
    else:
        raise InvalidInputError(f"video: frames must be an array or a sequence of arrays, got {type(frames).__name__}")
    if min(shape) <= 0:
        raise InvalidInputError(f"video: empty frames {tuple(shape)}")
    return tuple(int(s) for s in shape)
