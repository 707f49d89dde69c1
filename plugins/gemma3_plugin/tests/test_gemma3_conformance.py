"""The mm_framework conformance suite, run on the gemma3 family.

A small spec (32x32 images, 4 soft tokens, pan-and-scan with 16-pixel crops, so the sample
images get crops) keeps the heavier checks fast; the shipped presets run at 896x896 and
replay the goldens generated from transformers (``golden/cases``, with their stages:
``gemma3_stages``; the rejections are checked by ``test_gemma3_golden.py``). No check is
declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import gemma3_images
import numpy as np
import mm_framework as mmf
from gemma3_plugin import Gemma3Family
from mm_framework.testing import FamilyConformance, framed_prompt, golden

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset(mmf.preset("gemma3_4b_it")) - {
    "family", "image_token_id", "boi_token_id", "eoi_token_id", "image_seq_length", "height", "width",
    "rescale_factor", "image_mean", "image_std",
}


def gemma3_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the decoded RGB, then the resized whole image and each resized crop."""
    family = Gemma3Family({k: v for k, v in pipe.spec.items() if k != "family"})
    out = {}
    for i, rgb in enumerate(golden.decoded_images(pipe, inp)):
        out[f"decoded_rgb[{i}]"] = rgb
        h, w = rgb.shape[:2]
        for k, (x0, y0, x1, y1) in enumerate([(0, 0, w, h), *family.crops(w, h)]):
            out[f"resized_u8[{i}][{k}]"] = family.resized(np.ascontiguousarray(rgb[y0:y1, x0:x1]))
    return out


class _Gemma3Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([2, 105, 2364, 107], [family_spec["boi_token_id"]], [106])


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

    @pytest.fixture
    def golden_stages(self):
        return gemma3_stages


class TestGemma3PanAndScanPresetConformance(TestGemma3PresetConformance):
    golden_dir = None

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("gemma3_4b_it_pan_and_scan")
