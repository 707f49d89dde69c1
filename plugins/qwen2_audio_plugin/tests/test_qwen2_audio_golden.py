"""The golden cases beyond the conformance replay: the batch model kwargs as the processor
returned them, token counts from the header alone, and the rejections the generator
recorded (clips the processor expands to nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import digest, load_cases

from . import qwen2_audio_clips

soundfile = pytest.importorskip("soundfile")
pytest.importorskip("soxr")

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = load_cases(GOLDEN / "cases")
REJECTIONS = sorted((GOLDEN / "rejections").glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_batch_model_kwargs_are_the_processors(case):
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    kw = pipe.process(case.request(qwen2_audio_clips.make)).model_kwargs()
    want = case.doc["qwen2_audio"]
    assert sorted(kw) == ["feature_attention_mask", "input_features"]
    feats, mask = kw["input_features"], kw["feature_attention_mask"]
    assert feats.dtype == np.float32 and list(feats.shape) == want["input_features"]["shape"]
    assert digest(feats) == want["input_features"]["blake3"]
    assert mask.dtype == np.int32 and list(mask.shape) == want["feature_attention_mask"]["shape"]
    assert digest(mask) == want["feature_attention_mask"]["blake3"] and mask.sum(-1).tolist() == want["mask_sums"]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_counts_from_the_header_match_the_case(case, monkeypatch):
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    request = case.request(qwen2_audio_clips.make)
    monkeypatch.setattr(soundfile.SoundFile, "read", lambda *a, **k: pytest.fail("a count decoded samples"))
    counted = pipe.count_tokens(request)
    assert [list(o) for o in counted.offsets] == case.doc["expected"]["offsets"]
    assert [it.geometry.tokens for it in counted.items] == case.doc["qwen2_audio"]["num_audio_tokens"]
    assert [it.geometry.frames for it in counted.items] == case.doc["qwen2_audio"]["mask_sums"]


@pytest.mark.parametrize("path", REJECTIONS, ids=[p.stem for p in REJECTIONS])
def test_recorded_rejections(path):
    doc = json.loads(path.read_text())
    (clip,) = doc["audios"]
    data = qwen2_audio_clips.make(clip["name"])
    assert digest(data) == clip["blake3"], f"{path.stem}: the clip generator is not deterministic here"
    assert doc["reference"]["num_audio_tokens"] == 0
    pipe = mmf.pipeline_from_spec(doc["spec"])
    want = doc["expected_error"]
    for run in (pipe.process, pipe.count_tokens):
        with pytest.raises(getattr(mmf, want["type"]), match=f"^item {want['item']}: .*{want['match']}") as e:
            run(mmf.MmInput(audios=[data], input_ids=doc["prompt_ids"]))
        assert e.value.item == want["item"]
