"""The mm_framework conformance suite, run on the llava_onevision family.

Two specs: the shipped preset (the published checkpoint) with the golden cases generated
from transformers 5.24, and a small spec (32-pixel crops, Lanczos, the "default"
strategy, a lower cap) so the other choices of every field run through the same checks.
No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import llava_onevision_images
import pytest

import mm_framework as mmf
from mm_framework.testing import FamilyConformance

GOLDEN = Path(__file__).parent / "golden" / "cases"


class TestLlavaOnevisionPresetConformance(FamilyConformance):
    optional_fields = frozenset({"alpha", "exif_transpose"})
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("llava_onevision_qwen2_7b_ov")

    @pytest.fixture
    def golden_image_source(self):
        return llava_onevision_images.make


class TestLlavaOnevisionSmallConformance(FamilyConformance):
    optional_fields = frozenset({"alpha", "exif_transpose"})

    @pytest.fixture
    def family_spec(self):
        return {
            "family": "llava_onevision",
            "image_token_id": 7,
            "image_size": 32,
            "image_grid_pinpoints": [[32, 32], [32, 64], [64, 32], [64, 64], [32, 96], [96, 32], [96, 96]],
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711],
            "rescale_factor": 1 / 255,
            "resample": "pil_lanczos",
            "num_image_tokens": 16,
            "vision_feature_select_strategy": "default",
            "vision_aspect_ratio": "anyres_max_2",
            "alpha": "drop",
            "exif_transpose": True,
        }
