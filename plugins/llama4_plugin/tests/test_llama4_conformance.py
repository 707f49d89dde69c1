"""The mm_framework conformance suite, run on the llama4 family.

A small spec (32-pixel tiles of 8-pixel patches, 4 tokens per tile, up to 4 tiles, so the
sample images split into grids) keeps the heavier checks fast; the shipped presets run at
their published sizes and replay the goldens generated from transformers (``golden/cases``),
stages included: the decoded RGB, the padded uint8 canvas and the thumbnail.
No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from . import llama4_images
import mm_framework as mmf
from mm_framework.testing import FamilyConformance, framed_prompt, golden
from llama4_plugin import Llama4Family

GOLDEN = Path(__file__).resolve().parent / "golden" / "cases"
OPTIONAL = frozenset({"resample", "resize_to_max_canvas", "do_rescale", "do_normalize", "alpha", "exif_transpose"})


def llama4_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the decoded RGB, the padded uint8 canvas and (more than one tile) the thumbnail."""
    family = Llama4Family({k: v for k, v in pipe.spec.items() if k != "family"})
    out = {}
    for i, rgb in enumerate(golden.decoded_images(pipe, inp)):
        out[f"decoded_rgb[{i}]"] = rgb
        canvas, thumb = family.resized_images(rgb)
        out[f"canvas_u8[{i}]"] = canvas
        if thumb is not None:
            out[f"thumb_u8[{i}]"] = thumb
    return out


class _Prompts(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def prompt_for(self, family_spec):
        return framed_prompt([1, 2], [family_spec["image_token_id"]], [3])


class TestLlama4SmallConformance(_Prompts):
    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("llama4_scout_17b_16e_instruct"), "tile_size": 32, "patch_size": 8, "max_patches": 4}


class TestLlama4PresetConformance(_Prompts):
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("llama4_scout_17b_16e_instruct")

    @pytest.fixture
    def golden_image_source(self):
        return llama4_images.make

    @pytest.fixture
    def golden_stages(self):
        return llama4_stages
