"""The mm_framework conformance suite, run on the deepseek_ocr2 family.

A small spec (a 64-pixel global view, 32-pixel tiles, 8-pixel patches) keeps the heavier
checks fast while the sample images still get crop grids; the preset runs at its published
sizes and replays the goldens generated from transformers (``golden/cases``). No check is
declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from . import deepseek_ocr2_images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, golden
from deepseek_ocr2_plugin import DeepseekOcr2Family

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset(mmf.preset("deepseek_ocr2")) - {
    "family", "image_token_id", "size", "tile_size", "patch_size", "downsample_ratio", "rescale_factor",
    "image_mean", "image_std",
}


def deepseek_ocr2_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the decoded RGB, then its uint8 resizes: the crops' canvas (cropped items
    only) and the global view before padding."""
    family = DeepseekOcr2Family({k: v for k, v in pipe.spec.items() if k != "family"})
    out = {}
    for i, rgb in enumerate(golden.decoded_images(pipe, inp)):
        out[f"decoded_rgb[{i}]"] = rgb
        for k, stage in enumerate(x for x in family.resized_views(rgb) if x is not None):
            out[f"resized_u8[{i}][{k}]"] = stage
    return out


class TestDeepseekOcr2SmallConformance(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("deepseek_ocr2"), "size": 64, "tile_size": 32, "patch_size": 8, "downsample_ratio": 2}


class TestDeepseekOcr2PresetConformance(FamilyConformance):
    optional_fields = OPTIONAL
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("deepseek_ocr2")

    @pytest.fixture
    def golden_image_source(self):
        return deepseek_ocr2_images.make

    @pytest.fixture
    def golden_stages(self):
        return deepseek_ocr2_stages
