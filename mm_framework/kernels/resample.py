"""Audio resampling exactly as ``transformers.audio_utils.load_audio(..., backend="soundfile")``.

soxr at ``soxr_hq`` (librosa's default, which that loader copies), then padded with zeros
or trimmed to ``ceil(n * to_rate / from_rate)`` samples. soxr is the optional ``audio``
extra, imported on the first call that needs it.
"""

from __future__ import annotations

import math

import numpy as np

from ..checks import check_int
from ..errors import UnsupportedError


def resampled_length(num_samples: int, from_rate: int, to_rate: int) -> int:
    """How many samples :func:`resample` returns for ``num_samples`` (``ceil(n * to / from)``
    in float, the reference's expression), for counts made from a header."""
    return num_samples if from_rate == to_rate else math.ceil(num_samples * to_rate / from_rate)


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """float32 mono ``samples`` at ``from_rate`` Hz, at ``to_rate`` Hz (the same array when
    the rates are equal, as the reference returns its input)."""
    check_int(from_rate, "from_rate", minimum=1)
    check_int(to_rate, "to_rate", minimum=1)
    if from_rate == to_rate:
        return samples
    try:
        import soxr
    except ImportError:
        raise UnsupportedError("resampling audio needs soxr: pip install 'mm_framework[audio]'") from None
    n = resampled_length(samples.shape[-1], from_rate, to_rate)
    out = soxr.resample(samples, from_rate, to_rate, quality="soxr_hq")
    out = np.pad(out, (0, max(0, n - len(out))))[:n]
    return np.ascontiguousarray(out, dtype=np.float32)
