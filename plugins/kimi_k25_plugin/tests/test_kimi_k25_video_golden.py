"""Replay of the video goldens (``golden_video``, written by its generator from transformers 5.24 in
the torchvision venv) in any venv with PyAV: each case's committed clips through the pipeline give
the reference's expanded ids, ``pixel_values_videos`` (blake3), ``video_grid_thw`` rows, sampled
frames and ``replace_video_token`` text, token counts from the headers, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import kimi_k25_images, kimi_k25_reference as ref
import mm_framework as mmf
from kimi_k25_plugin import KimiK25Family
from mm_framework import plugin as mmp
from mm_framework.testing import assert_rejection, digest, load_cases
from mm_framework.testing.records import sha256

HERE = Path(__file__).resolve().parent / "golden_video"
CASES = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((HERE / "cases").glob("*.json"))]
ACCEPTED = [c for c in CASES if "rejection" not in c]
REJECTED = [c for c in CASES if "rejection" in c]


def _clips(case):
    clips = []
    for doc in case["clips"]:
        data = (HERE / "clips" / doc["file"]).read_bytes()
        assert sha256(data) == doc["sha256"], f"{doc['file']} differs from the clip the case was made from"
        clips.append(data)
    return clips


def _request(case):
    images = []
    if case["image"] is not None:
        images = [kimi_k25_images.make(case["image"])]
        assert sha256(images[0]) == case["image_sha256"]
    return mmf.MmInput(images=images, videos=_clips(case), input_ids=case["prompt_ids"])


def _spec(case):
    # The prompt ids are the test tokenizer's, so are its timestamp ids (reference.text_ids).
    return {**case["spec"], "video_text_token_ids": ref.text_ids(case["spec"])}


def test_the_goldens_cover_every_option_and_pin_the_preset():
    assert {c["variant"] for c in CASES} == {"preset", "budget_16", "all_frames", "fps_5_tps_2", "side_4_lanczos",
                                             "bilinear_clip_norm", "fps_60"}
    assert {c["provenance"]["transformers"] for c in CASES} == {"5.24.0"}
    preset = next(c for c in CASES if c["variant"] == "preset")["spec"]
    assert preset == mmf.preset("kimi_k2_5")


@pytest.mark.parametrize("case", ACCEPTED, ids=[c["name"] for c in ACCEPTED])
def test_case(case):
    spec, exp = _spec(case), case["expected"]
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(_request(case))
    kw = out.model_kwargs()
    assert out.input_ids.tolist() == exp["input_ids"]
    pv = kw["pixel_values_videos"]
    assert {"dtype": str(pv.dtype), "shape": list(pv.shape), "blake3": digest(pv)} == exp["pixel_values_videos"]
    assert kw["video_grid_thw"].tolist() == exp["video_grid_thw"]
    if "pixel_values" in exp:
        assert digest(kw["pixel_values"]) == exp["pixel_values"]["blake3"]
        assert kw["image_grid_thw"].tolist() == exp["image_grid_thw"]
    fam = KimiK25Family({k: v for k, v in spec.items() if k != "family"})
    videos = [it for it in out.items if it.modality == "video"]
    assert [fam.mm_expansion_text("video", it.geometry) for it in videos] == exp["expansion_text"]
    counted = pipe.count_tokens(_request(case))
    assert counted.input_ids.tolist() == exp["input_ids"] and counted.offsets == out.offsets
    # The frames the family samples are the reference's.
    for data, indices in zip(_clips(case), exp["frames_indices"]):
        clip = mmp.decode_clip(data, fam.mm_sample_frames, max_frames=1 << 20, max_pixels=1 << 40)
        assert list(clip.indices) == indices


def test_the_conformance_copies_hold_every_case():
    """``golden_video/conformance`` (replayed by ``TestKimiK25VideoConformance``) is written from the
    same reference runs: one case per accepted case, one rejection per refused one."""
    root = HERE / "conformance"
    assert [c.name for c in load_cases(root / "cases")] == [c["name"] for c in ACCEPTED]
    assert [c.name for c in load_cases(root / "rejections")] == [c["name"] for c in REJECTED]


@pytest.mark.parametrize("case", load_cases(HERE / "conformance" / "rejections"), ids=lambda c: c.name)
def test_conformance_rejection(case):
    assert_rejection(case, kimi_k25_images.make, naming_item=True)


@pytest.mark.parametrize("case", REJECTED, ids=[c["name"] for c in REJECTED])
def test_rejection(case):
    assert case["rejection"]["error"] == "ValueError" and "exceeds total_num_frames" in case["rejection"]["message"]
    with pytest.raises(mmf.MediaError, match="more than the clip has"):
        mmf.pipeline_from_spec(_spec(case)).process(_request(case))
