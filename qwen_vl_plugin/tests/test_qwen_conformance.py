"""The mm_framework conformance suite on qwen_vl, replaying the transformers goldens.

``TestQwenVlConformance`` runs every harness check on the ``qwen2_vl`` preset and replays
each accepted golden case (``golden/cases``, written from transformers 5.24 by
``golden/generate_qwen_vl.py``) through the harness, which also compares the recorded
decoded and resized images (the harness's standard stages: the decoded RGB and the stored
pixels), then checks what the harness does not: the model kwargs, the pixel-free token
count and the short position arrays. ``TestQwenVlTorchvisionConformance`` runs the
checks on the torchvision backend of the ``qwen3_vl`` preset. No check is declared as an expected failure.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import FamilyConformance, golden
from . import golden_images

GOLDEN = Path(__file__).parent / "golden"
OPTIONAL = frozenset({"backend", "alpha", "exif_transpose"})


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

    def test_golden_case(self, golden_case, golden_image_source, golden_stages, mm_update_goldens):
        out = golden.replay_case(
            golden_case, mmf.pipeline_from_spec, source=golden_image_source, stages=golden_stages,
            update=mm_update_goldens,
        )
        check_family_extras(golden_case, mmf.pipeline_from_spec(golden_case.doc["spec"]), out)


class TestQwenVlTorchvisionConformance(FamilyConformance):
    # Without video_fps a sampling qwen3 spec takes transformers' rule for fps=None
    # (docs/families/qwen_vl_video.md §3), and without the frame bounds the video
    # processor's class defaults (4 and 768), so they may be left out.
    optional_fields = OPTIONAL | {"video_fps", "video_min_frames", "video_max_frames"}

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("qwen3_vl"), "backend": "torchvision"}


def test_a_golden_whose_stage_differs_fails_replay(tmp_path):
    """Each recorded stage is compared: altering any one of them (in a copy) fails the replay."""
    src = GOLDEN / "cases" / "qwen2_5_vl-pil-multi_same_size"
    stages = json.loads((src / "case.json").read_text())["expected"]["stages"]
    assert len(stages) >= 4
    for k, name in enumerate(sorted(stages)):
        copy = tmp_path / str(k) / src.name
        shutil.copytree(src, copy)
        doc = json.loads((copy / "case.json").read_text())
        doc["expected"]["stages"][name] = "0" * 64
        (copy / "case.json").write_text(json.dumps(doc))
        (case,) = golden.load_cases(copy.parent)
        with pytest.raises(AssertionError, match=re.escape(f"stage {name!r} differs")):
            golden.replay_case(case, mmf.pipeline_from_spec, source=golden_images.make)
