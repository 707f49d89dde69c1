"""The mm_framework conformance suite, run on the minicpmv4_6 family.

A small spec (a 64-pixel budget, so the sample images slice into grids of small frames)
keeps the heavier checks fast; the shipped presets run at their published sizes and replay
the goldens generated from transformers (``golden/cases``). No check is declared as an
expected failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from . import minicpmv4_6_images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt, golden
from minicpmv4_6_plugin import MiniCPMV46Family
from minicpmv4_6_plugin.spec import REQUIRED

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset(mmf.preset("minicpm_v_4_6")) - {"family", *REQUIRED}


def minicpmv4_6_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the decoded RGB, then its uint8 frames: the source image and each slice."""
    family = MiniCPMV46Family({k: v for k, v in pipe.spec.items() if k != "family"})
    out = {}
    for i, rgb in enumerate(golden.decoded_images(pipe, inp)):
        out[f"decoded_rgb[{i}]"] = rgb
        for k, frame in enumerate(family.resized_images(rgb)):
            out[f"resized_u8[{i}][{k}]"] = np.ascontiguousarray(frame)
    return out


class _Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([1, 2], [family_spec["image_token_id"]], [3], text_from=31)


class TestMiniCPMV46SmallConformance(_Prompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("minicpm_v_4_6"), "scale_resolution": 64, "max_slice_nums": 6}


class TestMiniCPMV46PresetConformance(_Prompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("minicpm_v_4_6")

    @pytest.fixture
    def golden_image_source(self):
        return minicpmv4_6_images.make

    @pytest.fixture
    def golden_stages(self):
        return minicpmv4_6_stages


class TestMiniCPMV46FourXPresetConformance(TestMiniCPMV46PresetConformance):
    golden_dir = None  # the golden cases of every variant replay once, above

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("minicpm_v_4_6_4x")
