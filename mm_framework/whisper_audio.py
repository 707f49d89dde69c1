"""Audio items of families whose audio tower is Whisper's encoder (Qwen2-Audio, Qwen2.5-Omni, ...).

What those families share, written once for all of them: the ``WhisperFeatureExtractor``
settings as spec fields (:class:`WhisperSettings`) and as ``preprocessor_config.json``
keys (:func:`preprocessor_keys`, :func:`check_derived`), and the item
itself (:class:`WhisperAudio`): the mono source samples resampled to the extractor's rate
(``kernels.resample``, soxr HQ as ``load_audio``), ``kernels.WhisperMel`` padded or cut
to one chunk, its frame mask, and the placeholder count the encoder's stride-2
convolution and stride-2 pooling leave of the valid frames.
"""

from __future__ import annotations

from typing import Any

import attrs

from . import kernels
from .carriers import AudioHeader, DecodedAudio, ItemPlan, ProcessedItem, Tensor
from .config_keys import ConfigKeys
from .errors import MediaError
from .spec_fields import SpecFields

# Source seconds read past the chunk when resampling: soxr HQ's filter reaches a few
# milliseconds; a 0.25 s margin already gave identical chunks at every rate tried.
RESAMPLE_MARGIN_SECONDS = 2
FIELDS = ("feature_size", "sampling_rate", "n_fft", "hop_length", "chunk_length")
MAX_RATE = 384_000  # the audio modality's own bound on a source rate
MAX_MELS = 512
# WhisperFeatureExtractor.__init__ defaults (transformers 5.24), under their preprocessor_config.json names.
CLASS_DEFAULTS: dict[str, Any] = {
    "feature_size": 80, "sampling_rate": 16000, "hop_length": 160, "chunk_length": 30, "n_fft": 400,
}
# Keys pinned to the single value implemented. Dithering adds random noise to every frame;
# only the deterministic extractor is cloned.
PINNED: dict[str, Any] = {"padding_value": 0.0, "padding_side": "right", "dither": 0.0}
# The processors force the mask on whatever the file says.
INERT = ("return_attention_mask",)
DERIVED = ("n_samples", "nb_max_frames")
KEYS = (*CLASS_DEFAULTS, *PINNED, *INERT, *DERIVED)


@attrs.frozen
class WhisperSettings:
    """The extractor's settings: ``feature_size`` mels, ``sampling_rate``, ``n_fft``,
    ``hop_length`` and ``chunk_length`` seconds."""

    feature_size: int
    sampling_rate: int
    n_fft: int
    hop_length: int
    chunk_length: int

    @classmethod
    def read(cls, f: SpecFields, *, max_chunk_seconds: int) -> WhisperSettings:
        """The five fields of a spec, each failure a ``SpecError`` naming its field. A chunk
        is padded to ``chunk_length`` seconds whatever the clip holds, so the family bounds it."""
        rate = f.integer("sampling_rate", minimum=1, maximum=MAX_RATE)
        chunk = f.integer("chunk_length", minimum=1, maximum=max_chunk_seconds)
        n_fft = f.integer("n_fft", minimum=2)
        hop = f.integer("hop_length", minimum=1)
        if n_fft // 2 >= chunk * rate:
            # numpy's reflect padding needs more samples than half a window.
            raise f.error("n_fft", f"must be below 2 * chunk_length * sampling_rate = {2 * chunk * rate}, got {n_fft}")
        if hop > chunk * rate:
            raise f.error("hop_length", f"must be at most chunk_length * sampling_rate = {chunk * rate}, got {hop}")
        return cls(f.integer("feature_size", minimum=1, maximum=MAX_MELS), rate, n_fft, hop, chunk)

    @classmethod
    def of(cls, spec: Any) -> WhisperSettings:
        """The settings held by a family's spec value under the field names."""
        return cls(**{k: getattr(spec, k) for k in FIELDS})


def preprocessor_keys(keys: ConfigKeys) -> dict[str, Any]:
    """Check the extractor's pinned and inert keys of ``preprocessor_config.json`` (``keys``
    must know :data:`KEYS`) and return the five settings, class defaults filling the
    missing ones as ``from_pretrained`` would."""
    keys.pinned(PINNED)
    for key in INERT:
        keys.boolean(key)
    return {k: keys.values.get(k, v) for k, v in CLASS_DEFAULTS.items()}


def check_derived(keys: ConfigKeys, settings: WhisperSettings) -> None:
    """The extractor recomputes ``n_samples`` and ``nb_max_frames`` from the settings and
    ignores the saved values; a file whose values disagree was written for other settings."""
    n_samples = settings.chunk_length * settings.sampling_rate
    keys.pinned({"n_samples": n_samples, "nb_max_frames": n_samples // settings.hop_length},
                "from chunk_length, sampling_rate and hop_length")


def encoder_tokens(frames: int) -> int:
    """The placeholder count for ``frames`` valid mel frames (transformers'
    ``_get_feat_extract_output_lengths``): stride-2 convolution, then stride-2 pooling."""
    return (((frames - 1) // 2 + 1) - 2) // 2 + 1


@attrs.frozen
class AudioSpan:
    """One clip's geometry: its samples at the family's rate, the mel frames they fill
    (the mask's ones) and the placeholder tokens those frames give."""

    samples: int
    frames: int
    tokens: int


class WhisperAudio:
    """One family's audio items; immutable after construction (the mel filters are built
    here), so one object serves concurrent requests.

    ``token_text`` and ``processor`` name the placeholder and the reference processor in
    the refusal of a clip too short for one token."""

    def __init__(self, settings: WhisperSettings, *, token_text: str, processor: str) -> None:
        self.settings = settings
        self.token_text = token_text
        self.processor = processor
        self.mel = kernels.WhisperMel(n_mels=settings.feature_size, sampling_rate=settings.sampling_rate,
                                      n_fft=settings.n_fft, hop_length=settings.hop_length,
                                      chunk_length=settings.chunk_length)
        # The fewest samples whose frames give one token (3 frames): the processor would
        # expand a shorter clip's placeholder to nothing and drop the clip from the prompt.
        self.min_samples = 2 * settings.hop_length + 1

    def span(self, samples: int) -> AudioSpan:
        if samples < self.min_samples:
            raise MediaError(
                f"audio of {samples} samples at {self.settings.sampling_rate} Hz gives no {self.token_text} token "
                f"(at least {self.min_samples} samples are needed; {self.processor} would drop the clip "
                "from the prompt)"
            )
        frames = self.mel.num_valid_frames(samples)
        return AudioSpan(samples, frames, encoder_tokens(frames))

    def plan(self, header: AudioHeader) -> ItemPlan:
        """The clip's span from its header alone: no decoding."""
        rate = self.settings.sampling_rate
        return ItemPlan(self.span(kernels.resampled_length(header.frames, header.sample_rate, rate)), None)

    def frames_read(self, header: AudioHeader) -> int:
        """The source frames :meth:`process` needs (a family's ``mm_audio_frames``): one
        chunk, plus :data:`RESAMPLE_MARGIN_SECONDS` of source so the resampler's output over
        the chunk is the one it gives on the whole clip (soxr's first outputs depend on the
        input only up to its filter's reach; tests/test_whisper_audio.py checks it at every
        rate)."""
        seconds = self.settings.chunk_length + (0 if header.sample_rate == self.settings.sampling_rate
                                                else RESAMPLE_MARGIN_SECONDS)
        return seconds * header.sample_rate

    def process(self, media: DecodedAudio) -> ProcessedItem:
        """``input_features`` (f32 ``[mels, frames]``) and its ``feature_attention_mask`` (i64).
        ``media`` may hold only the first :meth:`frames_read` frames of a longer clip: the
        span and mask come from the whole clip's length, the features from its first chunk."""
        rate = self.settings.sampling_rate
        samples = kernels.resample(media.samples, media.sample_rate, rate)
        span = self.span(kernels.resampled_length(media.header.frames, media.sample_rate, rate))
        return ProcessedItem(
            Tensor.f32(self.mel(samples)),
            {"feature_attention_mask": Tensor.i64(self.mel.mask(span.samples))},
            span,
        )
