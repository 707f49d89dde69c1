"""The mm_framework conformance suite, run on the kimi_k25 family.

A small spec (8-pixel patches merged 2x2, a 64-patch budget, 16 patches per side, so the
sample images are scaled down and padded) keeps the heavier checks fast; the shipped preset
runs at its published sizes and replays the goldens generated from transformers
(``golden/cases``), stages included: the decoded RGB and the padded uint8 canvas (the
family's stored pixels). No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import kimi_k25_images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset({"resample", "rescale_factor", "do_rescale", "do_normalize", "alpha", "exif_transpose",
                      "video_sample_frames", "video_fps", "video_max_patches", "video_max_size_per_side",
                      "temporal_patch_size", "video_resample", "video_text_token_ids"})


class _Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([1, 2], [163602, family_spec["image_token_id"], 163604], [3])


class TestKimiK25SmallConformance(_Prompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("kimi_k2_5"), "patch_size": 8, "max_patches": 64, "max_size_per_side": 16}


class TestKimiK25PresetConformance(_Prompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("kimi_k2_5")

    @pytest.fixture
    def golden_image_source(self):
        return kimi_k25_images.make


class TestKimiK25VideoConformance(_Prompts):
    """The suite on the preset with the test tokenizer's video text ids; replays the video goldens
    (``golden_video/conformance``: clips alone, two clips beside an image, every video option, each
    case with its own spec) through the same harness."""

    golden_dir = GOLDEN.parent.parent / "golden_video" / "conformance" / "cases"

    @pytest.fixture
    def family_spec(self):
        from . import kimi_k25_reference

        spec = mmf.preset("kimi_k2_5")
        return {**spec, "video_text_token_ids": kimi_k25_reference.text_ids(spec)}

    @pytest.fixture
    def golden_image_source(self):
        return kimi_k25_images.make
