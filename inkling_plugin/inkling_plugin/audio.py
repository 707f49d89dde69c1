"""Inkling's audio: ``InklingFeatureExtractor``'s log-mel front end and ``InklingProcessor``'s
dMel quantisation (transformers 5.24), one token per feature frame.

Per clip: resample to ``sampling_rate`` (``kernels.resample``, as transformers' ``load_audio``),
``kernels.StftLogMel`` (hop ``audio_token_duration_s * sampling_rate``, a Hann window of
``window_size_multiplier`` hops, ``n_fft`` defaulting to the window), then
``kernels.dmel_bins``: clamp to ``[dmel_min_value, dmel_max_value]`` and take the nearest of
``num_dmel_bins`` centres. The features agree with the reference's float32 ``torch.stft``
within a tolerance, so a bin can differ where a value lies that close to a bin boundary
(docs/audio.md, "Inkling"); the quantisation itself is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework.plugin import DecodedAudio, Grid, OutputItem, ProcessedItem, SpecFields, Tensor

# The spec's audio fields, named as the transformers classes name them, with their
# defaults (InklingConfig.audio_token_id; InklingFeatureExtractor's and InklingProcessor's
# __init__ defaults).
AUDIO_DEFAULTS: dict[str, Any] = {
    "audio_token_id": 200053,
    "sampling_rate": 16000,
    "feature_size": 80,
    "audio_token_duration_s": 0.05,
    "window_size_multiplier": 2.0,
    "n_fft": None,
    "num_dmel_bins": 16,
    "dmel_min_value": -7.0,
    "dmel_max_value": 2.0,
}
# The vocabulary's audio placeholder: InklingProcessor's audio_token and its id.
INKLING_AUDIO_TOKEN = (200053, "<|unused_200053|>")
# The core's bound on a decoded clip's rate (AudioHeader): no clip is resampled above it.
MAX_AUDIO_RATE = 384_000
# Bounds that keep one frame's tables small; the published configuration is far inside them.
MAX_FEATURE_SIZE = 512
MAX_N_FFT = 1 << 16
# dmel_bins compares each value with its two neighbouring centres; that equals torch's
# argmin while centres are far apart relative to float32 rounding (see kernels.dmel_bins).
MAX_DMEL_BINS = 4096
# InklingFeatureExtractor's _to_exact_int tolerance.
_EXACT = 1e-6


def _exact_samples(f: SpecFields, names: list[str], value: float) -> int:
    rounded = round(value)
    if abs(value - rounded) > _EXACT or rounded < 1:
        raise f.error(names, f"must give a whole, positive number of samples, got {value!r}")
    return int(rounded)


@attrs.frozen(eq=False)
class InklingAudio:
    """The validated audio fields and the tables built from them (immutable, shared)."""

    token_id: int
    sampling_rate: int
    feature_size: int
    audio_token_duration_s: float
    window_size_multiplier: float
    n_fft: int
    num_dmel_bins: int
    dmel_min_value: float
    dmel_max_value: float
    mel: kernels.StftLogMel = attrs.field(repr=False)
    centers: np.ndarray = attrs.field(repr=False)

    @classmethod
    def from_fields(cls, f: SpecFields) -> InklingAudio:
        rate = f.integer("sampling_rate", minimum=1, maximum=MAX_AUDIO_RATE)
        feature_size = f.integer("feature_size", minimum=1, maximum=MAX_FEATURE_SIZE)
        duration = f.number("audio_token_duration_s", positive=True)
        multiplier = f.number("window_size_multiplier", positive=True)
        hop = _exact_samples(f, ["audio_token_duration_s", "sampling_rate"], duration * rate)
        window = _exact_samples(f, ["audio_token_duration_s", "window_size_multiplier", "sampling_rate"],
                                duration * multiplier * rate)
        if window > MAX_N_FFT:
            raise f.error(["audio_token_duration_s", "window_size_multiplier", "sampling_rate"],
                          f"give a window of {window} samples, above {MAX_N_FFT}")
        n_fft = f.integer("n_fft", minimum=1, maximum=MAX_N_FFT, nullable=True)
        if n_fft is None:
            n_fft = window
        elif n_fft < window:
            # torch.stft refuses a window longer than the FFT.
            raise f.error("n_fft", f"must be at least the window of {window} samples, got {n_fft}")
        bins = f.integer("num_dmel_bins", minimum=1, maximum=MAX_DMEL_BINS)
        lo, hi = f.number("dmel_min_value"), f.number("dmel_max_value")
        if not lo < hi:
            raise f.error(["dmel_min_value", "dmel_max_value"], f"must be increasing, got {lo!r} and {hi!r}")
        centers = kernels.dmel_centers(lo, hi, bins)
        if bins > 1 and not (np.diff(centers) > 0).all():
            raise f.error(["dmel_min_value", "dmel_max_value", "num_dmel_bins"],
                          "give bin centres that are not distinct in float32")
        mel = kernels.StftLogMel(n_mels=feature_size, sampling_rate=rate, hop_length=hop, win_length=window,
                                 n_fft=n_fft)
        return cls(f.integer("audio_token_id"), rate, feature_size, duration, multiplier, n_fft, bins, lo, hi, mel,
                   centers)

    def fields(self) -> dict[str, Any]:
        """The resolved spec fields (``n_fft`` filled in)."""
        return {"audio_token_id": self.token_id, "sampling_rate": self.sampling_rate,
                "feature_size": self.feature_size, "audio_token_duration_s": self.audio_token_duration_s,
                "window_size_multiplier": self.window_size_multiplier, "n_fft": self.n_fft,
                "num_dmel_bins": self.num_dmel_bins, "dmel_min_value": self.dmel_min_value,
                "dmel_max_value": self.dmel_max_value}

    def num_tokens(self, frames: int, source_rate: int) -> int:
        """Tokens of a clip of ``frames`` samples at ``source_rate``, from its header."""
        return self.mel.num_frames(kernels.resampled_length(frames, source_rate, self.sampling_rate))

    def features(self, samples: np.ndarray) -> np.ndarray:
        """float32 ``[frames, feature_size]`` log10 mel magnitudes of samples at ``sampling_rate``."""
        return self.mel(samples)

    def bins(self, features: np.ndarray) -> np.ndarray:
        return kernels.dmel_bins(features, self.centers, self.dmel_min_value, self.dmel_max_value)

    def process(self, media: DecodedAudio) -> ProcessedItem:
        samples = kernels.resample(media.samples, media.sample_rate, self.sampling_rate)
        bins = self.bins(self.features(samples))
        return ProcessedItem(feature=Tensor.i64(bins), geometry=Grid(1, 1, len(bins)))

    def model_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        """``InklingProcessor``'s audio inputs: ``audio_input_ids`` int32 ``[clips, frames,
        feature_size]`` (clips padded to the longest with the bin of 0.0, what its feature
        extractor leaves in padded frames) and ``audio_input_ids_mask`` bool ``[clips, frames]``."""
        longest = max(it.feature.shape[0] for it in items)
        pad = self.bins(np.zeros(1, np.float32))[0]
        ids = np.full((len(items), longest, self.feature_size), pad, np.int32)
        mask = np.zeros((len(items), longest), np.bool_)
        for k, it in enumerate(items):
            n = it.feature.shape[0]
            ids[k, :n] = it.feature.array
            mask[k, :n] = True
        return {"audio_input_ids": ids, "audio_input_ids_mask": mask}
