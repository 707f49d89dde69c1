"""The mm_framework conformance suite, run on the llava_onevision family.

Three specs: the shipped preset (the published checkpoint) with the golden cases generated
from transformers 5.24 (their stages, transformers' decoded, fitted and base uint8 images,
computed by ``llava_onevision_stages``), a small spec (32-pixel crops, Lanczos, the "default"
strategy, a lower cap) so the other choices of every field run through the same checks, and
the preset on the torchvision backend (its parity is the live tests'). No check is declared
as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

from . import llava_onevision_images
import numpy as np
import pytest

import mm_framework as mmf
from llava_onevision_plugin import LlavaOnevisionFamily, pixels
from mm_framework.testing import FamilyConformance, golden

GOLDEN = Path(__file__).parent / "golden" / "cases"
OPTIONAL = frozenset({"backend", "alpha", "exif_transpose"})


def llava_onevision_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """Per item the decoded image, the image fitted inside its pinpoint and the base image."""
    family = LlavaOnevisionFamily({k: v for k, v in pipe.spec.items() if k != "family"})
    s = family.spec
    out = {}
    for k, rgb in enumerate(golden.decoded_images(pipe, inp)):
        plan = family.plan(rgb.shape[1], rgb.shape[0])
        out[f"decoded_{k}"] = rgb
        out[f"resized_{k}"] = pixels.fitted_image(rgb, plan, s.resizer, None)
        out[f"base_{k}"] = pixels.base_image(rgb, s.image_size, s.resizer, None)
    return out


class TestLlavaOnevisionPresetConformance(FamilyConformance):
    optional_fields = OPTIONAL
    golden_dir = GOLDEN

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("llava_onevision_qwen2_7b_ov")

    @pytest.fixture
    def golden_image_source(self):
        return llava_onevision_images.make

    @pytest.fixture
    def golden_stages(self):
        return llava_onevision_stages


class TestLlavaOnevisionSmallConformance(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return {
            "family": "llava_onevision",
            "image_token_id": 7,
            "image_size": 32,
            "image_grid_pinpoints": [[32, 32], [32, 64], [64, 32], [64, 64], [32, 96], [96, 32], [96, 96]],
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711],
            "rescale_factor": 1 / 255,
            "resample": "pil_lanczos",
            "num_image_tokens": 16,
            "vision_feature_select_strategy": "default",
            "vision_aspect_ratio": "anyres_max_2",
            "alpha": "drop",
            "exif_transpose": True,
        }


class TestLlavaOnevisionTorchvisionConformance(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("llava_onevision_qwen2_7b_ov"), "backend": "torchvision"}
