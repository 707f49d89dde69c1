"""One audio clip of the ``qwen2_5_omni`` family: Whisper features and its ``<|AUDIO|>`` count.

As ``Qwen2_5OmniProcessor._process_audio`` over ``WhisperFeatureExtractor``'s numpy path:
the mono source samples resampled to ``sampling_rate`` (``kernels.resample``, soxr HQ as
``load_audio``), padded (``padding="max_length"``) or cut to one ``chunk_length`` chunk
(300 s for the published checkpoint), and its frame mask. The clip's token count is the
processor's ``_get_feat_extract_output_lengths`` of the mask's sum.
"""

from __future__ import annotations

import attrs

from mm_framework import kernels
from mm_framework import plugin as mmp

from .omni_spec import OmniSpec

AUDIO_TOKEN_TEXT = "<|AUDIO|>"


@attrs.frozen
class AudioSpan:
    """One clip's geometry: its samples at the family's rate, the mel frames they fill
    (the mask's ones) and the ``<|AUDIO|>`` tokens those frames give."""

    samples: int
    frames: int
    tokens: int


def audio_tokens(frames: int) -> int:
    """``_get_feat_extract_output_lengths``: the audio tower's stride-2 convolution, then
    its stride-2 pooling, over ``frames`` valid mel frames."""
    return (((frames - 1) // 2 + 1) - 2) // 2 + 1


class OmniAudio:
    """The spec's feature extractor; immutable after construction, so thread-safe."""

    def __init__(self, spec: OmniSpec) -> None:
        self.spec = spec
        self.mel = kernels.WhisperMel(n_mels=spec.feature_size, sampling_rate=spec.sampling_rate, n_fft=spec.n_fft,
                                      hop_length=spec.hop_length, chunk_length=spec.chunk_length)
        # The fewest samples whose frames give one token (3 frames): the processor would
        # expand a shorter clip's placeholder to nothing and drop the clip from the prompt.
        self.min_samples = 2 * spec.hop_length + 1

    def span(self, samples: int) -> AudioSpan:
        if samples < self.min_samples:
            raise mmp.MediaError(
                f"audio of {samples} samples at {self.spec.sampling_rate} Hz gives no {AUDIO_TOKEN_TEXT} token "
                f"(at least {self.min_samples} samples are needed; Qwen2_5OmniProcessor would drop the clip "
                "from the prompt)"
            )
        frames = self.mel.num_valid_frames(samples)
        return AudioSpan(samples, frames, audio_tokens(frames))

    def plan(self, header: mmp.AudioHeader) -> mmp.ItemPlan:
        return mmp.ItemPlan(self.span(kernels.resampled_length(header.frames, header.sample_rate,
                                                               self.spec.sampling_rate)), None)

    def process(self, media: mmp.DecodedAudio) -> mmp.ProcessedItem:
        samples = kernels.resample(media.samples, media.sample_rate, self.spec.sampling_rate)
        return mmp.ProcessedItem(
            mmp.Tensor.f32(self.mel(samples)),
            {"feature_attention_mask": mmp.Tensor.i64(self.mel.mask(len(samples)))},
            self.span(len(samples)),
        )
