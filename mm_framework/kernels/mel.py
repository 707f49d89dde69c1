"""The Whisper log-mel spectrogram, bit-identical to ``transformers.WhisperFeatureExtractor``
on its numpy path (torch absent), with its ``padding="max_length"`` truncation and masks.

The reference, per waveform: right-pad with zeros or truncate to ``chunk_length *
sampling_rate`` samples (float32); reflect-pad ``n_fft // 2`` on both sides; per frame,
float64 samples times a periodic Hann window, ``np.fft.rfft``, stored as complex64; power
``|X|**2`` in float64; ``mel_filters.T @ power`` (Slaney-normalised, Slaney-scale
triangles from 0 to 8 kHz) floored at 1e-10; ``log10`` then float32; the last frame
dropped; clamped at ``max - 8``; ``(x + 4) / 4``. The attention mask is the sample mask
taken every ``hop_length`` samples (its last entry dropped when the chunk is not a whole
number of hops).

Here the frames are strided views of the padded waveform and ``rfft`` runs over all of
them in one call: numpy's pocketfft computes each row exactly as the reference's one-frame
calls do, and every other step is the reference's expression on arrays of the same shape
and layout, so the bytes are the same (tests/kernels/test_mel.py checks it live).
Dithering (``dither != 0``, random) is not offered.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..checks import check_int


def _hertz_to_mel_slaney(freq: float) -> float:
    if freq >= 1000.0:
        return 15.0 + np.log(freq / 1000.0) * (27.0 / np.log(6.4))
    return 3.0 * freq / 200.0


def _mel_to_hertz_slaney(mels: np.ndarray) -> np.ndarray:
    freq = 200.0 * mels / 3.0
    log_region = mels >= 15.0
    freq[log_region] = 1000.0 * np.exp(np.log(6.4) / 27.0 * (mels[log_region] - 15.0))
    return freq


def mel_filter_bank(num_frequency_bins: int, num_mel_filters: int, min_frequency: float, max_frequency: float,
                    sampling_rate: int) -> np.ndarray:
    """``transformers.audio_utils.mel_filter_bank(..., norm="slaney", mel_scale="slaney")``:
    float64 ``[num_frequency_bins, num_mel_filters]``."""
    mel_freqs = np.linspace(_hertz_to_mel_slaney(min_frequency), _hertz_to_mel_slaney(max_frequency),
                            num_mel_filters + 2)
    filter_freqs = _mel_to_hertz_slaney(mel_freqs)
    fft_freqs = np.linspace(0, sampling_rate // 2, num_frequency_bins)
    filter_diff = np.diff(filter_freqs)
    slopes = np.expand_dims(filter_freqs, 0) - np.expand_dims(fft_freqs, 1)
    down_slopes = -slopes[:, :-2] / filter_diff[:-1]
    up_slopes = slopes[:, 2:] / filter_diff[1:]
    filters = np.maximum(np.zeros(1), np.minimum(down_slopes, up_slopes))
    filters *= np.expand_dims(2.0 / (filter_freqs[2:num_mel_filters + 2] - filter_freqs[:num_mel_filters]), 0)
    return filters


def hann_window(length: int) -> np.ndarray:
    """The periodic Hann window of ``window_function(length, "hann")``, float64."""
    return np.hanning(length + 1)[:-1]


@attrs.frozen(eq=False)
class WhisperMel:
    """Whisper's features for one parameter set; build once (the tables), call per item."""

    n_mels: int = 80
    sampling_rate: int = 16000
    n_fft: int = 400
    hop_length: int = 160
    chunk_length: int = 30
    filters: np.ndarray = attrs.field(init=False, repr=False)
    window: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        for name in ("n_mels", "sampling_rate", "n_fft", "hop_length", "chunk_length"):
            check_int(getattr(self, name), f"WhisperMel.{name}", minimum=1)
        object.__setattr__(self, "filters", mel_filter_bank(1 + self.n_fft // 2, self.n_mels, 0.0, 8000.0,
                                                             self.sampling_rate))
        object.__setattr__(self, "window", hann_window(self.n_fft))

    @property
    def n_samples(self) -> int:
        """Samples of one chunk: what every input is padded or truncated to."""
        return self.chunk_length * self.sampling_rate

    @property
    def num_frames(self) -> int:
        """Feature frames of one chunk (``nb_max_frames``)."""
        return self.n_samples // self.hop_length

    def num_valid_frames(self, num_samples: int) -> int:
        """How many mask entries are 1 for an input of ``num_samples``, from its length alone."""
        n = min(num_samples, self.n_samples)
        return min(-(-n // self.hop_length), len(range(0, self.n_samples, self.hop_length)) - self._mask_trim)

    @property
    def _mask_trim(self) -> int:
        return 1 if self.n_samples % self.hop_length else 0

    def mask(self, num_samples: int) -> np.ndarray:
        """The int32 attention mask of an input of ``num_samples``."""
        sample_mask = np.zeros(self.n_samples, np.int32)
        sample_mask[:min(num_samples, self.n_samples)] = 1
        mask = sample_mask[::self.hop_length]
        return mask[:-1] if self._mask_trim else mask

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        """float32 ``[n_mels, num_frames]`` features of float32 mono ``samples``."""
        waveform = np.zeros(self.n_samples, np.float32)
        n = min(len(samples), self.n_samples)
        waveform[:n] = samples[:n]
        half = self.n_fft // 2
        padded = np.pad(waveform, [(half, half)], mode="reflect").astype(np.float64)
        frames = sliding_window_view(padded, self.n_fft)[::self.hop_length]
        spectrum = np.fft.rfft(frames * self.window, axis=-1).astype(np.complex64)
        power = np.abs(spectrum, dtype=np.float64) ** 2.0
        mel = np.maximum(1e-10, np.dot(self.filters.T, power.T))
        log_spec = np.asarray(np.log10(mel), np.float32)[:, :-1]
        log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
        return (log_spec + 4.0) / 4.0
