"""The ``qwen2_audio`` family hooks: Whisper log-mel features and the ``<|AUDIO|>`` run.

Per item, as ``Qwen2AudioProcessor`` with ``WhisperFeatureExtractor`` on its numpy path:
the mono source samples resampled to ``sampling_rate`` (``kernels.resample``: soxr HQ,
padded or trimmed as ``load_audio``), then ``kernels.WhisperMel`` padded to one chunk
(longer clips truncated to it, as the processor's ``truncation=True`` default) and its
frame mask. The prompt's single ``<|AUDIO|>`` expands to the processor's count, which
follows from the valid frames alone: ``(((l - 1) // 2 + 1) - 2) // 2 + 1`` (the encoder's
stride-2 convolution, then its stride-2 pooling). ``<|audio_bos|>``/``<|audio_eos|>`` are
prompt text (the chat template writes them around the placeholder); the processor does
not add them, so neither does the layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import parse_spec

AUDIO_TOKEN_TEXT = "<|AUDIO|>"


@attrs.frozen
class AudioSpan:
    """One clip's geometry: its samples at the family's rate, the mel frames they fill
    (the mask's ones) and the ``<|AUDIO|>`` tokens those frames give."""

    samples: int
    frames: int
    tokens: int


def audio_tokens(frames: int) -> int:
    """Qwen2AudioProcessor's token count for ``frames`` valid mel frames."""
    return (((frames - 1) // 2 + 1) - 2) // 2 + 1


def resampled_length(frames: int, from_rate: int, to_rate: int) -> int:
    """The sample count ``kernels.resample`` gives: ``ceil(frames * to / from)``."""
    return frames if from_rate == to_rate else -(-frames * to_rate // from_rate)


class Qwen2AudioFamily:
    """One immutable object per pipeline; every table (the mel filters) is built here."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        s = self.spec
        self.mel = kernels.WhisperMel(n_mels=s.feature_size, sampling_rate=s.sampling_rate, n_fft=s.n_fft,
                                      hop_length=s.hop_length, chunk_length=s.chunk_length)
        # The fewest samples whose frames give one token (3 frames): the processor would
        # expand a shorter clip's placeholder to nothing and drop the clip from the prompt.
        self.min_samples = 2 * s.hop_length + 1

    def span(self, samples: int) -> AudioSpan:
        if samples < self.min_samples:
            raise mmp.MediaError(
                f"audio of {samples} samples at {self.spec.sampling_rate} Hz gives no {AUDIO_TOKEN_TEXT} token "
                f"(at least {self.min_samples} samples are needed; Qwen2AudioProcessor would drop the clip "
                "from the prompt)"
            )
        frames = self.mel.num_valid_frames(samples)
        return AudioSpan(samples, frames, audio_tokens(frames))

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        n = self.mel.num_frames
        return mmp.Capabilities(
            modalities=("audio",),
            placeholders={"audio": self.spec.audio_token_id},
            placeholder_texts={"audio": AUDIO_TOKEN_TEXT},
            outputs={"audio": mmp.ItemOutputs("f32", {"feature_attention_mask": ("i64", (n,))})},
        )

    @mmp.hookimpl
    def mm_resolved_spec(self) -> dict[str, Any]:
        return self.spec.to_dict()

    @mmp.hookimpl
    def mm_plan_item(self, header: mmp.AudioHeader) -> mmp.ItemPlan:
        n = resampled_length(header.frames, header.sample_rate, self.spec.sampling_rate)
        return mmp.ItemPlan(self.span(n), None)

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedAudio) -> mmp.ProcessedItem:
        samples = kernels.resample(media.samples, media.sample_rate, self.spec.sampling_rate)
        span = self.span(len(samples))
        return mmp.ProcessedItem(
            mmp.Tensor.f32(self.mel(samples)),
            {"feature_attention_mask": mmp.Tensor.i64(self.mel.mask(len(samples)))},
            span,
        )

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[AudioSpan]) -> mmp.TokenLayout:
        return mmp.layout_by_placeholder(input_ids, self.spec.audio_token_id, [g.tokens for g in geometries])

    @mmp.hookimpl
    def mm_model_kwargs(self, items: Sequence[mmp.OutputItem]) -> dict[str, np.ndarray]:
        """What ``Qwen2AudioProcessor`` returns: ``input_features`` f32 ``[n, mels, frames]``
        and ``feature_attention_mask`` int32 ``[n, frames]`` (the extractor's mask dtype)."""
        return {
            "input_features": np.stack([it.feature.array for it in items]),
            "feature_attention_mask": np.stack([it.aux["feature_attention_mask"].array for it in items]).astype(
                np.int32),
        }
