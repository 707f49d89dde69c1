"""What both audio decoders (libsndfile's in :mod:`.audio`, PyAV's in :mod:`.audio_av`) do
to their headers and samples."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..carriers import AudioHeader
from ..errors import LimitExceededError, MediaError
from ..limits import Limits


def check_seconds(header: AudioHeader, limits: Limits) -> None:
    if header.frames > limits.max_audio_seconds * header.sample_rate:
        raise LimitExceededError(
            f"audio of {header.duration:.2f} s ({header.frames} frames at {header.sample_rate} Hz) is above "
            f"Limits.max_audio_seconds = {limits.max_audio_seconds}"
        )


def downmix(block: np.ndarray) -> np.ndarray:
    # transformers' own expression on soundfile's [frames, channels] block, so the bytes match.
    waveform = block.T
    return waveform.mean(axis=0) if waveform.shape[0] > 1 else waveform[0]


def check_finite(samples: np.ndarray, what: str) -> None:
    # Float WAVs store NaN and infinity as they are; features of them would be NaN throughout.
    if not np.isfinite(samples).all():
        raise MediaError(f"{what} hold NaN or infinity")


# A family's ``mm_audio_frames`` as a decoder calls it: how many frames from the start to
# decode, ``None`` for all.
Keep = Callable[[AudioHeader], "int | None"] | None


def kept_frames(header: AudioHeader, keep: Keep) -> int:
    """The frames of a clip to decode: all, or the first ``keep(header)`` of them."""
    wanted = None if keep is None else keep(header)
    return header.frames if wanted is None else min(wanted, header.frames)
