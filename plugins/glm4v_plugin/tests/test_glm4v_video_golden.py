"""The glm4v video goldens beyond the conformance replay (which replays every accepted case):
the reference's refusals give the recorded mm_framework error, the recorded sampled frames
equal the samplers', and the cases record the reference's versions. No torch needed; PyAV is."""

from __future__ import annotations

from pathlib import Path

import pytest

import mm_framework as mmf
from mm_framework import errors
from mm_framework import plugin as mmp
from mm_framework.testing.golden import load_cases
from . import glm4v_images as images
from glm4v_plugin.family import Glm4vFamily

pytest.importorskip("av", reason="decoding a clip needs PyAV (mm-framework[video])")

ROOT = Path(__file__).resolve().parent / "golden_video"
CASES = load_cases(ROOT / "cases")
REJECTED = load_cases(ROOT / "rejections")


def test_goldens_cover_every_config_and_record_versions():
    assert {c.doc["spec"]["video_variant"] for c in CASES} == {"glm4v", "glm46v"}
    assert len(CASES) == 19 and len(REJECTED) == 3
    for c in CASES + REJECTED:
        prov = c.doc["provenance"]
        assert prov["transformers"] == "5.24.0" and {"torch", "torchvision", "pyav", "ffmpeg"} <= set(prov), c.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_the_references_refusals_are_ours(case):
    want = case.doc["expected_error"]
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    with pytest.raises(getattr(errors, want["type"]), match=want["match"]):
        pipe.process(case.request(images.make))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sampled_frames_are_the_references(case):
    fam = Glm4vFamily({k: v for k, v in case.doc["spec"].items() if k != "family"})
    media = mmf.pipeline_from_spec(case.doc["spec"]).decode(case.request(images.make))[1]
    (clip,) = [m for m in media if isinstance(m, mmp.VideoClip)]
    assert list(clip.indices) == case.doc["sampled_indices"]
    header = mmp.ClipHeader(clip.total_frames, clip.fps, clip.width, clip.height, duration=clip.total_frames / clip.fps)
    assert fam.video.sample(header) == case.doc["sampled_indices"]
