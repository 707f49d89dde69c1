"""The mm_framework conformance suite, run on the gemma3 family.

A small spec (32x32 images, 4 soft tokens, pan-and-scan with 16-pixel crops, so the sample
images get crops) keeps the heavier checks fast; the shipped presets run at 896x896 and
replay the goldens generated from transformers (``golden/cases``; the rejections are
checked by ``test_gemma3_golden.py``). No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gemma3_images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset(mmf.preset("gemma3_4b_it")) - {
    "family", "image_token_id", "boi_token_id", "eoi_token_id", "image_seq_length", "height", "width",
    "rescale_factor", "image_mean", "image_std",
}


class _Gemma3Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        boi = family_spec["boi_token_id"]

        def prompt(n: int) -> list[int]:
            ids = [2, 105, 2364, 107]
            for k in range(n):
                ids += [boi, 11 + k]
            return ids + [106]

        return prompt


class TestGemma3SmallConformance(_Gemma3Prompts):
    @pytest.fixture
    def family_spec(self):
        return {
            **mmf.preset("gemma3_4b_it_pan_and_scan"),
            "height": 32, "width": 32, "image_seq_length": 4, "pan_and_scan_min_crop_size": 16,
        }


class TestGemma3PresetConformance(_Gemma3Prompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("gemma3_4b_it")

    @pytest.fixture
    def golden_image_source(self):
        return gemma3_images.make


class TestGemma3PanAndScanPresetConformance(TestGemma3PresetConformance):
    golden_dir = None

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("gemma3_4b_it_pan_and_scan")
