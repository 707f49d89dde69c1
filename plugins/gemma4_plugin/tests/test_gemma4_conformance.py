"""The mm_framework conformance suite, run on the gemma4 family.

A small spec (4-pixel patches pooled 2x2, the smallest budget) keeps the heavier checks fast;
the shipped presets replay the goldens generated from transformers (``golden/cases``, with
their stages: the decoded RGB and the resized image through ``golden.standard_stages`` and
``mm_stored_pixels``; the rejections and model kwargs are checked by ``test_gemma4_golden.py``).
No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import gemma4_images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset(mmf.preset("gemma4")) - {"family", "image_token_id", "boi_token_id", "eoi_token_id"}


class _Gemma4Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([2, 105, 2364, 107], [family_spec["image_token_id"]], [106])


class TestGemma4SmallConformance(_Gemma4Prompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("gemma4"), "patch_size": 4, "pooling_kernel_size": 2, "max_soft_tokens": 70}


class TestGemma4PresetConformance(_Gemma4Prompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("gemma4")

    @pytest.fixture
    def golden_image_source(self):
        return gemma4_images.make


class TestGemma4TorchvisionPresetConformance(_Gemma4Prompts):
    @pytest.fixture
    def family_spec(self):
        return mmf.preset("gemma4_torchvision")
