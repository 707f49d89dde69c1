"""The ``qwen2_audio`` family hooks: Whisper log-mel features and the ``<|AUDIO|>`` run.

Per item, as ``Qwen2AudioProcessor`` with ``WhisperFeatureExtractor`` on its numpy path:
``mmp.whisper.WhisperAudio`` (one 30 s chunk, longer clips truncated to it as the processor's
``truncation=True`` default, its frame mask and the encoder's token count).
``<|audio_bos|>``/``<|audio_eos|>`` are
prompt text (the chat template writes them around the placeholder); the processor does
not add them, so neither does the layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mm_framework import plugin as mmp

from .spec import parse_spec

AUDIO_TOKEN_TEXT = "<|AUDIO|>"


class Qwen2AudioFamily:
    """One immutable object per pipeline; every table (the mel filters) is built here."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.spec = parse_spec(params)
        self.audio = mmp.whisper.WhisperAudio(mmp.whisper.WhisperSettings.of(self.spec), token_text=AUDIO_TOKEN_TEXT,
                                      processor="Qwen2AudioProcessor")

    @mmp.hookimpl
    def mm_capabilities(self) -> mmp.Capabilities:
        n = self.audio.mel.num_frames
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
        return self.audio.plan(header)

    @mmp.hookimpl
    def mm_audio_frames(self, header: mmp.AudioHeader) -> int:
        return self.audio.frames_read(header)  # one chunk: the processor cuts longer clips

    @mmp.hookimpl
    def mm_process_item(self, media: mmp.DecodedAudio) -> mmp.ProcessedItem:
        return self.audio.process(media)

    @mmp.hookimpl
    def mm_layout(self, input_ids: np.ndarray, geometries: Sequence[mmp.whisper.AudioSpan]) -> mmp.TokenLayout:
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
