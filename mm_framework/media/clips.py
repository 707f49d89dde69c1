"""Video items after I/O: an encoded clip stays bytes (decoded later on the fan-out); a
clip given as frames becomes a :class:`DecodedClip`, copied, limited and hashed when the
request is taken.

Frames may be uint8 arrays, PIL images or encoded image sources; image sources are
fetched like any image source and decoded as transformers' ``load_image`` does
(EXIF-transposed, alpha dropped). The content hash of a decoded clip is blake3 in
key-derivation mode with its own context, over the metadata and the frames' bytes, so it
never equals the hash of an encoded source or of a decoded image.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from PIL import Image

from ..carriers import DecodeOptions, VideoFrames
from ..errors import LimitExceededError
from ..limits import Limits
from .audio import TakenAudio, take_audio
from .decode import decode_rgb, pil_to_rgb
from .hashing import LazyHash, keyed_digest
from .policy import ByteBudget
from .video import VideoClip
from .video_frames import clip_from_frames

HASH_CONTEXT = "mm_framework 2026-12 decoded video v1"
# How transformers' load_image reads a frame given as a path or URL.
_FRAME_DECODE = DecodeOptions(alpha="drop", exif_transpose=True)


@attrs.frozen(eq=False, slots=False)
class DecodedClip(LazyHash):
    """The frames, and the audio track the caller gave (``VideoFrames.audio``), which the
    clip carries only for a family that asks for it. Hashed on first use of ``hash`` (a
    pipeline built with ``hashes=False`` never asks)."""

    clip: VideoClip
    audio: TakenAudio | None = None

    def _digest(self) -> int:
        clip = self.clip
        head = f"{clip.fps!r}\0{clip.total_frames}\0{list(clip.indices)}\0{clip.frames.shape}\0".encode()
        # A clip without a track hashes as before.
        tail = b"" if self.audio is None else f"\0audio {self.audio.hash}".encode()
        return keyed_digest(HASH_CONTEXT, head, clip.frames.data, tail)


def _frame_array(frame: Any, fetch: Callable[[Any], bytes], max_pixels: int) -> Any:
    if isinstance(frame, np.ndarray):
        return frame
    if isinstance(frame, Image.Image):
        return pil_to_rgb(frame, _FRAME_DECODE).rgb
    options = attrs.evolve(_FRAME_DECODE, max_pixels=max_pixels)
    return decode_rgb(fetch(frame), options).rgb


def take_clip(
    src: VideoFrames | np.ndarray, limits: Limits, budget: ByteBudget, fetch: Callable[[Any], bytes]
) -> DecodedClip:
    """``src`` as a :class:`DecodedClip`: frames gathered, limits checked, bytes claimed."""
    if not isinstance(src, VideoFrames):
        src = VideoFrames(src)
    frames = src.frames
    if not isinstance(frames, np.ndarray):
        frames = [_frame_array(f, fetch, limits.max_image_pixels) for f in frames]
    clip = clip_from_frames(
        frames, fps=src.fps, indices=src.indices, total_frames=src.total_frames,
        max_frames=limits.max_video_frames, max_pixels=limits.max_video_pixels,
    )
    if not budget.claim(clip.frames.nbytes):
        raise LimitExceededError(f"decoded video of {clip.frames.nbytes} bytes exceeds the request media byte budget")
    audio = None if src.audio is None else take_audio(src.audio, limits, budget)
    return DecodedClip(clip, audio)
