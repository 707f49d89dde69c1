"""The mm_framework conformance suite, run on the smolvlm family.

A small spec (96-pixel longest edge, 32-pixel tiles, 4 tokens per tile, so the sample
images split into grids) keeps the heavier checks fast; the shipped presets run at their
published sizes and replay the goldens generated from transformers (``golden/cases``).
No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import smolvlm_images
import numpy as np
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt, golden
from smolvlm_plugin import SmolVLMFamily

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset(mmf.preset("smolvlm_256m_instruct")) - {
    "family", "variant", "image_token_id", "fake_image_token_id", "global_image_token_id", "row_col_token_ids",
    "newline_token_id", "double_newline_ids", "image_seq_len", "size_longest_edge", "max_image_size",
    "rescale_factor", "image_mean", "image_std",
}


def smolvlm_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the decoded RGB, then its uint8 resizes: the longest edge, the grid-sized
    image (split images only) and the global image."""
    family = SmolVLMFamily({k: v for k, v in pipe.spec.items() if k != "family"})
    out = {}
    for i, rgb in enumerate(golden.decoded_images(pipe, inp)):
        out[f"decoded_rgb[{i}]"] = rgb
        for k, stage in enumerate(x for x in family.resized_images(rgb) if x is not None):
            out[f"resized_u8[{i}][{k}]"] = stage
    return out


class _Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([1, 2], [family_spec["image_token_id"]], [3])


class TestSmolVLMSmallConformance(_Prompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("smolvlm_256m_instruct"), "size_longest_edge": 96, "max_image_size": 32,
                "image_seq_len": 4}


class TestSmolVLMPresetConformance(_Prompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("smolvlm_256m_instruct")

    @pytest.fixture
    def golden_image_source(self):
        return smolvlm_images.make

    @pytest.fixture
    def golden_stages(self):
        return smolvlm_stages


class TestSmolVLM2PresetConformance(TestSmolVLMPresetConformance):
    golden_dir = None  # the golden cases of every preset replay once, above

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("smolvlm2_500m_video_instruct")


class TestIdefics3PresetConformance(TestSmolVLMPresetConformance):
    golden_dir = None

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("idefics3_8b_llama3")
