"""Log-mel spectrograms from shared pieces (Slaney mel filters, Hann windows, strided frames):

* :class:`WhisperMel`, bit-identical to ``transformers.WhisperFeatureExtractor`` on its
  numpy path (torch absent), with its ``padding="max_length"`` truncation and masks;
* :class:`StftLogMel`, the ``torch.stft(center=False)`` log10 mel magnitudes of
  ``transformers.InklingFeatureExtractor`` (within a stated tolerance: the reference's
  float32 FFT is MKL's, see that class), and :func:`dmel_bins`, ``InklingProcessor``'s
  exact quantisation of them.

WhisperMel's reference, per waveform: right-pad with zeros or truncate to ``chunk_length *
sampling_rate`` samples (float32); reflect-pad ``n_fft // 2`` on both sides; per frame,
float64 samples times a periodic Hann window, ``np.fft.rfft``, stored as complex64; power
``|X|**2`` in float64; ``mel_filters.T @ power`` (Slaney-normalised, Slaney-scale
triangles from 0 to 8 kHz) floored at 1e-10; ``log10`` then float32; the last frame
dropped; clamped at ``max - 8``; ``(x + 4) / 4``. The attention mask is the sample mask
taken every ``hop_length`` samples (its last entry dropped when the chunk is not a whole
number of hops).

Here the frames are strided views of the padded waveform and ``rfft`` runs over blocks of
them: numpy's pocketfft computes each row exactly as the reference's one-frame calls do,
window, cast, ``abs`` and square are elementwise, and the mel product is the reference's
one ``np.dot`` of arrays of the same shape and layout, so the bytes are the same
(tests/kernels/test_mel.py checks it live). Blocks keep the per-frame temporaries in cache
(a 30 s chunk's whole-array ones are 10 MB each), and the frames after the input's last
nonzero sample are all zeros, whose power is exactly 0 without an FFT: a 5 s clip
transforms a sixth of the chunk. Dithering (``dither != 0``, random) is not offered.
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


def hann_window_f32(length: int) -> np.ndarray:
    """``torch.hann_window(length, periodic=True, dtype=torch.float32)``'s arithmetic: float32
    ``n * (2 pi / length)``, its cosine, ``* -0.5 + 0.5``. torch takes the cosine with its own
    vectorised float32 ``cos``; here it is the float64 cosine rounded to float32, so a few
    entries differ from torch's by one ulp (51 of 1600 at 1600)."""
    arg = np.arange(length, dtype=np.float32) * np.float32(2.0 * np.pi / length)
    return np.cos(arg.astype(np.float64)).astype(np.float32) * np.float32(-0.5) + np.float32(0.5)


def frames(padded: np.ndarray, n_fft: int, hop_length: int) -> np.ndarray:
    """The ``[num_frames, n_fft]`` strided view of every ``hop_length``-th window of ``padded``."""
    return sliding_window_view(padded, n_fft)[::hop_length]


# Frames per block of WhisperMel: the float64 temporaries of one block (400 KB at n_fft 400)
# stay in cache.
_CACHE_BLOCK = 128


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

    def _padded(self, samples: np.ndarray) -> tuple[np.ndarray, int, int]:
        """The reference's float64 reflect-padded chunk, as far as the frames that touch a
        nonzero sample read it; how many frames those are; and how many the chunk has."""
        n, half, hop = min(len(samples), self.n_samples), self.n_fft // 2, self.hop_length
        total = (self.n_samples + 2 * half - self.n_fft) // hop + 1
        nonzero = np.flatnonzero(samples[:n])
        if not len(nonzero):
            return np.zeros(self.n_fft, np.float64), 0, total
        last = int(nonzero[-1])
        if last >= self.n_samples - half - 1:  # the right reflection holds signal: every frame
            waveform = np.zeros(self.n_samples, np.float32)
            waveform[:n] = samples[:n]
            return np.pad(waveform, [(half, half)], mode="reflect").astype(np.float64), total, total
        # Frame f starts at padded sample f * hop; the last nonzero one is half + last.
        busy = min(total, (half + last) // hop + 1)
        padded = np.zeros((busy - 1) * hop + self.n_fft, np.float64)
        head = samples[1:min(half, n - 1) + 1][::-1]  # np.pad's reflection: padded[i] = x[half - i]
        padded[half - len(head):half] = head
        body = min(n, len(padded) - half)
        padded[half:half + body] = samples[:body]
        return padded, busy, total

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        """float32 ``[n_mels, num_frames]`` features of float32 mono ``samples``."""
        padded, busy, total = self._padded(samples)
        view = frames(padded, self.n_fft, self.hop_length)
        power = np.zeros((total, 1 + self.n_fft // 2), np.float64)
        block = np.empty((min(_CACHE_BLOCK, max(busy, 1)), self.n_fft), np.float64)
        for start in range(0, busy, _CACHE_BLOCK):
            rows = view[start:min(start + _CACHE_BLOCK, busy)]
            windowed = np.multiply(rows, self.window, out=block[:len(rows)])
            spectrum = np.fft.rfft(windowed, axis=-1).astype(np.complex64)
            np.square(np.abs(spectrum, dtype=np.float64), out=power[start:start + len(rows)])
        mel = np.maximum(1e-10, np.dot(self.filters.T, power.T))
        log_spec = np.asarray(np.log10(mel), np.float32)[:, :-1]
        log_spec = np.maximum(log_spec, log_spec.max() - 8.0)
        return (log_spec + 4.0) / 4.0


# Frames transformed per block: bounds the float64 spectrum of a long clip (30 min at
# Inkling's hop is 36,000 frames, 460 MB of complex128 at once).
_FRAME_BLOCK = 2048


@attrs.frozen(eq=False)
class StftLogMel:
    """log10 mel magnitudes of ``torch.stft(center=False)`` frames, as
    ``transformers.InklingFeatureExtractor._torch_extract_fbank_features``: the float32
    waveform right-padded with zeros to a whole number of hops and left-padded with
    ``n_fft - hop_length`` zeros; frames every ``hop_length`` samples times a periodic Hann
    window of ``win_length`` (zero-padded to ``n_fft`` in the middle, as ``torch.stft``);
    ``sqrt(max(re**2 + im**2, 1e-10))``; the float32 Slaney filters (``f_min`` to ``f_max``,
    Slaney-normalised) times the magnitudes; ``log10(max(., 1e-10))``. ``num_frames(n) =
    ceil(n / hop_length)``, every frame valid.

    The reference computes in float32 with MKL's FFT, whose rounding cannot be reproduced
    with numpy; here every step after the float32 window runs in float64 and the result is
    rounded once to float32. The difference is the reference's float32 FFT error, about
    1e-7 of the frame's largest magnitude in linear terms (docs/audio.md, "Inkling", gives
    the measured tolerance and where it moves a dMel bin).
    """

    n_mels: int = 80
    sampling_rate: int = 16000
    hop_length: int = 800
    win_length: int = 1600
    n_fft: int = 1600
    f_min: float = 0.0
    f_max: float | None = None
    filters: np.ndarray = attrs.field(init=False, repr=False)
    window: np.ndarray = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        for name in ("n_mels", "sampling_rate", "hop_length", "win_length", "n_fft"):
            check_int(getattr(self, name), f"StftLogMel.{name}", minimum=1)
        if self.win_length > self.n_fft:
            raise ValueError(f"StftLogMel.win_length must be <= n_fft, got {self.win_length} > {self.n_fft}")
        f_max = self.sampling_rate / 2.0 if self.f_max is None else self.f_max
        bank = mel_filter_bank(1 + self.n_fft // 2, self.n_mels, self.f_min, f_max, self.sampling_rate)
        # The reference multiplies by the filters stored as float32.
        object.__setattr__(self, "filters", np.ascontiguousarray(bank.T, np.float32).astype(np.float64))
        left = (self.n_fft - self.win_length) // 2
        window = np.zeros(self.n_fft, np.float32)
        window[left:left + self.win_length] = hann_window_f32(self.win_length)
        object.__setattr__(self, "window", window.astype(np.float64))

    def num_frames(self, num_samples: int) -> int:
        """Feature frames of an input of ``num_samples`` (all valid)."""
        return -(-num_samples // self.hop_length)

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        """float32 ``[num_frames, n_mels]`` features of float32 mono ``samples``."""
        n = len(samples)
        left = max(self.n_fft - self.hop_length, 0)
        padded = np.zeros(left + self.num_frames(n) * self.hop_length, np.float32)
        padded[left:left + n] = samples
        view = frames(padded, self.n_fft, self.hop_length)
        out = np.empty((len(view), self.n_mels), np.float32)
        for start in range(0, len(view), _FRAME_BLOCK):
            spectrum = np.fft.rfft(view[start:start + _FRAME_BLOCK] * self.window, axis=-1)
            magnitude = np.sqrt(np.maximum(spectrum.real ** 2 + spectrum.imag ** 2, 1e-10))
            mel = np.maximum(magnitude @ self.filters.T, 1e-10)
            out[start:start + len(mel)] = np.log10(mel)
        return out


def dmel_centers(min_value: float, max_value: float, num_bins: int) -> np.ndarray:
    """``torch.linspace(min_value, max_value, num_bins, dtype=torch.float64).to(torch.float32)``:
    torch's linspace steps from the start for the first half and back from the end for the
    second (``RangeFactoriesKernel``), which numpy's ``linspace`` does not."""
    check_int(num_bins, "num_bins", minimum=1)
    i = np.arange(num_bins, dtype=np.float64)
    if num_bins == 1:
        return np.array([min_value], np.float32)
    step = (max_value - min_value) / (num_bins - 1)
    values = np.where(i < num_bins // 2, min_value + step * i, max_value - step * (num_bins - 1 - i))
    return values.astype(np.float32)


def dmel_bins(features: np.ndarray, centers: np.ndarray, min_value: float, max_value: float) -> np.ndarray:
    """``InklingProcessor._extract_dmel_bins``: the float32 ``features`` clamped to
    ``[min_value, max_value]``, then the index of the nearest of the sorted float32
    ``centers`` by ``|x - c|`` in float32, the lower index on a tie (``argmin`` takes the
    first), as int64.

    Only the two centres around each value are compared (``searchsorted``): float32
    rounding is monotone, so a centre further away is never strictly nearer, and it ties
    only when two centres are closer than a rounding step, which the callers' bin counts
    rule out (checked with the brute-force argmin in the tests).
    """
    x = np.clip(features, np.float32(min_value), np.float32(max_value))
    hi = np.clip(np.searchsorted(centers, x), 1, max(len(centers) - 1, 1))
    if len(centers) == 1:
        return np.zeros(x.shape, np.int64)
    lo = hi - 1
    take_lo = np.abs(x - centers[lo]) <= np.abs(x - centers[hi])
    return np.where(take_lo, lo, hi).astype(np.int64)
