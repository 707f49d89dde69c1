"""The mm_framework conformance suite on qwen2_5_omni: its image form on the preset (images
between ``<|vision_bos|>`` and ``<|vision_eos|>``) and its audio form on a smaller spec
(a 5 s chunk at 8 kHz, 80 mels; clips between ``<|audio_bos|>`` and ``<|audio_eos|>``).
The goldens (images, audio and video in one prompt) are replayed by ``test_omni_golden.py``.
No check is declared as an expected failure."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import mm_framework as mmf
from mm_framework.testing import AudioFamilyConformance, FamilyConformance

OPTIONAL = frozenset({"backend", "alpha", "exif_transpose"})


def marked_prompt(pipeline, modality: str, start: str, end: str) -> Callable[[int], list[int]]:
    spec = pipeline.spec
    ph, bos, eos = int(pipeline.capabilities.placeholders[modality]), spec[start], spec[end]

    def prompt(n: int) -> list[int]:
        ids = [11]
        for k in range(n):
            ids += [bos, ph, eos, 12 + k % 5]
        return ids + [29]

    return prompt


class TestOmniImageConformance(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("qwen2_5_omni")

    @pytest.fixture
    def prompt_for(self, pipeline):
        return marked_prompt(pipeline, "image", "vision_start_token_id", "vision_end_token_id")


class TestOmniAudioConformance(AudioFamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("qwen2_5_omni"), "feature_size": 80, "sampling_rate": 8000, "n_fft": 256,
                "hop_length": 80, "chunk_length": 5}

    @pytest.fixture
    def prompt_for(self, pipeline):
        return marked_prompt(pipeline, "audio", "audio_start_token_id", "audio_end_token_id")
