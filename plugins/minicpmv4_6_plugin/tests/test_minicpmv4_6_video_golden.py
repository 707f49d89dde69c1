"""Replay the video goldens (generate_minicpmv4_6_video_goldens.py, made in the torchvision
venv from transformers' MiniCPMV4_6Processor) through the pipeline: expanded ids,
``pixel_values_videos`` bytes, ``target_sizes_videos``, and the header-only token count."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf

from .minicpmv4_6_video_cases import CLIPS, PROMPTS, VARIANTS

pytest.importorskip("av")

GOLDEN = Path(__file__).resolve().parent / "golden_video"
CASES = sorted((GOLDEN / "cases").glob("*.json"))


def test_every_variant_and_clip_has_a_case():
    assert len(CASES) == len(VARIANTS) * len(CLIPS) + 1


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path):
    case = json.loads(path.read_text())
    want = case["expected"]
    pipe = mmf.pipeline_from_spec(case["spec"])
    clip = (GOLDEN / "clips" / f"{case['clip']}.mp4").read_bytes()
    request = mmf.MmInput(videos=[clip] * PROMPTS[case["prompt"]].count("<|video_pad|>"),
                          input_ids=want["prompt_ids"])
    out = pipe.process(request)
    assert out.input_ids.tolist() == want["input_ids"]
    kw = out.model_kwargs()
    pv = kw["pixel_values_videos"]
    assert list(pv.shape) == want["pixel_values_videos"]["shape"] and pv.dtype == np.float32
    assert hashlib.sha256(pv.tobytes()).hexdigest() == want["pixel_values_videos"]["sha256"]
    assert kw["target_sizes_videos"].dtype == np.int32
    assert kw["target_sizes_videos"].tolist() == want["target_sizes_videos"]
    assert "pixel_values" not in kw
    counted = pipe.count_tokens(request)
    assert counted.offsets == out.offsets
