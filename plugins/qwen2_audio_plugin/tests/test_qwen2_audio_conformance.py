"""The mm_framework conformance suite (its audio form), run on the qwen2_audio family.

The preset replays the goldens generated from transformers (``golden/cases``, with the
16 kHz samples ``load_audio`` gives as the ``resampled[i]`` stage); a second spec takes
other values for every field (80 mels at 8 kHz, a 5 s chunk, a 256-point FFT). No check
is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp
from mm_framework.testing import AudioFamilyConformance

from . import qwen2_audio_clips

pytest.importorskip("soundfile")
pytest.importorskip("soxr")

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"


def qwen2_audio_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the mono samples at the family's rate, as ``load_audio`` returns them: of
    the whole clip, decoded as the audio modality decodes (the family itself reads only
    the first chunk of a longer one, ``mm_audio_frames``)."""
    rate = pipe.spec["sampling_rate"]
    whole = [mmp.decode_audio(item.source, mmf.Limits()) for item in inp.items]
    return {f"resampled[{i}]": kernels.resample(m.samples, m.sample_rate, rate) for i, m in enumerate(whole)}


class TestQwen2AudioConformance(AudioFamilyConformance):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("qwen2_audio")

    @pytest.fixture
    def golden_image_source(self):
        return qwen2_audio_clips.make

    @pytest.fixture
    def golden_stages(self):
        return qwen2_audio_stages


class TestQwen2AudioOtherSpecConformance(AudioFamilyConformance):
    @pytest.fixture
    def family_spec(self):
        return {"family": "qwen2_audio", "audio_token_id": 7, "feature_size": 80, "sampling_rate": 8000,
                "n_fft": 256, "hop_length": 80, "chunk_length": 5}
