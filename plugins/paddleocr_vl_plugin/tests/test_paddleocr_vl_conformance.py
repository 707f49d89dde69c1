"""The mm_framework conformance suite, run on the paddleocr_vl family.

A small spec (28 * 28 .. 112 * 112 pixels, so the sample images are resized up and down)
keeps the heavier checks fast; the preset runs at the class defaults and replays the
goldens generated from transformers (``golden/cases``; their stages are the decoded and
the resized image, ``golden.standard_stages`` through ``mm_stored_pixels``). No check is
declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import paddleocr_vl_images as images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset({"backend", "alpha", "exif_transpose"})
START, END = 101305, 101306


class _PaddlePrompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([100273, 5], [START, family_spec["image_token_id"], END], [7, 6])


class TestPaddleOcrVlSmallConformance(_PaddlePrompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("paddleocr_vl"), "min_pixels": 28 * 28, "max_pixels": 112 * 112}


class TestPaddleOcrVlPresetConformance(_PaddlePrompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("paddleocr_vl")

    @pytest.fixture
    def golden_image_source(self):
        return images.make
