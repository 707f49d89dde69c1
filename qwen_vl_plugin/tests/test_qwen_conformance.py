"""The mm_framework conformance suite on qwen_vl, replaying the transformers goldens.

``TestQwenVlConformance`` runs every harness check on the ``qwen2_vl`` preset and replays
each accepted golden case (``golden/cases``, written from transformers 5.24 by
``golden/generate_qwen_vl.py``) through the harness, then checks what the harness does
not: the model kwargs, the pixel-free token count and the short position arrays. When
``pixel_values`` differ, the recorded decoded and resized digests name the first stage
that does. The goldens are the reference's outputs, so ``--mm-update-goldens`` must not
rewrite them. ``TestQwenVlTorchvisionConformance`` runs the checks on the torchvision
backend of the ``qwen3_vl`` preset. No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.testing import FamilyConformance, golden
from qwen_vl_plugin import QwenVlFamily
import golden_images

GOLDEN = Path(__file__).parent / "golden"
OPTIONAL = frozenset({"backend", "alpha", "exif_transpose"})


def first_differing_stage(case: golden.GoldenCase) -> None:
    """Fail naming the first stage (decode, resize) that differs from the reference."""
    family = QwenVlFamily({k: v for k, v in case.doc["spec"].items() if k != "family"})
    recorded = case.doc["expected"]["stages"]
    for i, data in enumerate(case.images(golden_images.make)):
        rgb = mmp.decode_rgb(data, family.mm_decode_options()).rgb
        assert golden.digest(rgb) == recorded[f"decoded_rgb[{i}]"], f"golden case {case.name}: stage 'decoded_rgb[{i}]' differs"
        resized = family.resized(rgb)
        assert golden.digest(resized) == recorded[f"resized_u8[{i}]"], f"golden case {case.name}: stage 'resized_u8[{i}]' differs"


def check_family_extras(case: golden.GoldenCase, pipe: mmf.Pipeline, out: mmf.Output) -> None:
    extra = case.doc["qwen_vl"]
    for i, item in enumerate(extra["items"]):
        h, w = item["decoded_shape"][:2]
        assert pipe.num_media_tokens(w, h) == item["tokens"] == out.offsets[i][1] - out.offsets[i][0] + 1
    kwargs = out.model_kwargs()
    want = extra["model_kwargs"]
    assert kwargs["image_grid_thw"].dtype == np.int64 and kwargs["image_grid_thw"].tolist() == want["image_grid_thw"]
    pv = kwargs["pixel_values"]
    assert pv.dtype == np.float32 and list(pv.shape) == want["pixel_values"]["shape"]
    assert golden.digest(pv) == want["pixel_values"]["blake3"]
    if "positions" in extra:
        np.testing.assert_array_equal(out.positions.positions, np.asarray(extra["positions"], dtype=np.int64))


class TestQwenVlConformance(FamilyConformance):
    optional_fields = OPTIONAL
    golden_dir = GOLDEN / "cases"

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("qwen2_vl")

    @pytest.fixture
    def golden_image_source(self):
        return golden_images.make

    def test_golden_case(self, golden_case, golden_image_source, mm_update_goldens):
        if mm_update_goldens:
            pytest.skip("qwen_vl goldens are transformers' outputs: regenerate them with golden/generate_qwen_vl.py")
        try:
            out = golden.replay_case(golden_case, mmf.pipeline_from_spec, source=golden_image_source)
        except AssertionError:
            first_differing_stage(golden_case)
            raise
        check_family_extras(golden_case, mmf.pipeline_from_spec(golden_case.doc["spec"]), out)


class TestQwenVlTorchvisionConformance(FamilyConformance):
    # Without video_fps a sampling qwen3 spec takes transformers' rule for fps=None
    # (docs/families/qwen_vl_video.md §3), so it may be left out.
    optional_fields = OPTIONAL | {"video_fps"}

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("qwen3_vl"), "backend": "torchvision"}
