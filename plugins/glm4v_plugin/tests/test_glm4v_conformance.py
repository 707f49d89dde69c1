"""The mm_framework conformance suite, run on the glm4v family.

A small spec (28 * 28 .. 112 * 112 pixels, so the sample images are resized up and down)
keeps the heavier checks fast; the preset runs at the published values and replays the
goldens generated from transformers (``golden/cases``; their stages are the decoded and
the resized image, ``golden.standard_stages`` through ``mm_stored_pixels``). No check is
declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import glm4v_images as images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt
from glm4v_plugin.spec import VIDEO_DEFAULTS

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
GOLDEN_VIDEO = Path(__file__).resolve().parent / "golden_video" / "cases"
OPTIONAL = frozenset({"backend", "alpha", "exif_transpose", *VIDEO_DEFAULTS})
# [gMASK] <sop> <|user|>, <|begin_of_image|> <|end_of_image|>, <|assistant|>.
GMASK, SOP, USER, START, END, ASSISTANT = 151331, 151333, 151336, 151339, 151340, 151337


class _GlmPrompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([GMASK, SOP, USER, 8], [START, family_spec["image_token_id"], END], [5, ASSISTANT, 8])


class TestGlm4vSmallConformance(_GlmPrompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("glm4_1v_9b_thinking"), "min_pixels": 28 * 28, "max_pixels": 112 * 112}


class TestGlm4vPresetConformance(_GlmPrompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("glm4_1v_9b_thinking")

    @pytest.fixture
    def golden_image_source(self):
        return images.make


class TestGlm4vVideoConformance(_GlmPrompts):
    """The suite on a spec that takes videos (small bounds, a few timestamp ids); replays the
    video goldens (``generate_glm4v_video_goldens.py``: clips alone and between images,
    both generations, each case with its own spec)."""

    golden_dir = GOLDEN_VIDEO

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("glm4_6v"), "min_pixels": 28 * 28, "max_pixels": 112 * 112,
                "video_timestamp_ids": {"0.0 seconds": [20, 30, 20, 31]}}

    @pytest.fixture
    def golden_image_source(self):
        return images.make
