"""The mm_framework conformance suite, run on the intern_vl family.

Two specs: a small one (16-pixel tiles) so the heavier checks stay fast, and the shipped
InternVL2.5 preset at the real 448-pixel tile size. No check is declared as an expected
failure. ``golden_dir`` stays unset: the harness's golden cases compare feature bytes,
while this family's contract is a tolerance, checked by ``test_intern_vl_golden.py``.
"""

from __future__ import annotations

import pytest

import mm_framework as mmf
from mm_framework.testing import FamilyConformance


class TestInternVlConformance(FamilyConformance):
    optional_fields = frozenset({"use_thumbnail", "processor", "backend"})

    @pytest.fixture
    def family_spec(self):
        return {
            "family": "intern_vl",
            "image_token_id": 7,
            "img_context_token_id": 8,
            "img_start_token_id": 5,
            "img_end_token_id": 6,
            "image_size": 16,
            "num_image_token": 4,
            "max_num": 12,
            "image_mean": [0.485, 0.456, 0.406],
            "image_std": [0.229, 0.224, 0.225],
            "use_thumbnail": True,
        }


class TestInternVlPresetConformance(FamilyConformance):
    optional_fields = frozenset({"use_thumbnail", "processor", "backend"})

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("internvl2_5_8b")


TRANSFORMERS_SPEC = {
    "family": "intern_vl",
    "image_token_id": 8,
    "img_context_token_id": 8,
    "img_start_token_id": 5,
    "img_end_token_id": 6,
    "image_size": 16,
    "num_image_token": 4,
    "max_num": 12,
    "image_mean": [0.485, 0.456, 0.406],
    "image_std": [0.229, 0.224, 0.225],
    "use_thumbnail": True,
    "processor": "transformers",
}


class TestInternVlTransformersConformance(FamilyConformance):
    """The same small spec with transformers' processing (GotOcr2ImageProcessorPil)."""

    optional_fields = frozenset({"use_thumbnail", "processor", "backend"})

    @pytest.fixture
    def family_spec(self):
        return dict(TRANSFORMERS_SPEC)


class TestInternVlTorchvisionConformance(FamilyConformance):
    """The same with transformers' torchvision image processor (GotOcr2ImageProcessor); its
    ``processor`` cannot be omitted (the default, SGLang's, has no image backend)."""

    optional_fields = frozenset({"use_thumbnail", "backend"})

    @pytest.fixture
    def family_spec(self):
        return {**TRANSFORMERS_SPEC, "backend": "torchvision"}
