"""The ``qwen2_audio`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "qwen2_audio", **fields}``; the factory receives the fields
without ``"family"``. Every field is read through :class:`mmp.SpecFields`; every failure
is a ``SpecError`` naming the field. The fields are ``WhisperFeatureExtractor``'s
(``feature_size`` mels, ``sampling_rate``, ``n_fft``, ``hop_length``, ``chunk_length``
seconds) and the ``<|AUDIO|>`` id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework import plugin as mmp

FAMILY = "qwen2_audio"

REQUIRED = ("audio_token_id", "feature_size", "sampling_rate", "n_fft", "hop_length", "chunk_length")

# A chunk is padded to chunk_length seconds whatever the clip holds: ten minutes bounds the
# per-item buffers (and the model's own chunk is 30 s).
MAX_CHUNK_SECONDS = 600


@attrs.frozen
class Qwen2AudioSpec:
    """A validated ``qwen2_audio`` spec. Build it with :func:`parse_spec`."""

    audio_token_id: int
    feature_size: int
    sampling_rate: int
    n_fft: int
    hop_length: int
    chunk_length: int

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included."""
        return {"family": FAMILY, **attrs.asdict(self)}


def parse_spec(params: Mapping[str, Any]) -> Qwen2AudioSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`Qwen2AudioSpec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED)
    whisper = mmp.whisper.WhisperSettings.read(f, max_chunk_seconds=MAX_CHUNK_SECONDS)
    return Qwen2AudioSpec(audio_token_id=f.integer("audio_token_id", minimum=0, maximum=2**31 - 1),
                          **attrs.asdict(whisper))


# Qwen/Qwen2-Audio-7B-Instruct (and Qwen2-Audio-7B, which shares the processor files):
# preprocessor_config.json's WhisperFeatureExtractor settings and config.json's
# audio_token_index (tests/golden/models/qwen2-audio-7b-instruct, SOURCES.md there).
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2_audio": Qwen2AudioSpec(
        audio_token_id=151646,
        feature_size=128,
        sampling_rate=16000,
        n_fft=400,
        hop_length=160,
        chunk_length=30,
    ).to_dict(),
}
