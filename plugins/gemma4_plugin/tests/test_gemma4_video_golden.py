"""Replay of the gemma4 video goldens (made in the torchvision venv by
``generate_gemma4_video_goldens.py`` from transformers 5.24; no torch needed here): every
accepted case's ids, offsets, model kwargs, kept frames, timestamps and expansion text, from
processing and from headers alone; every rejected case's typed error."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("av")

from . import gemma4_images  # noqa: E402
import mm_framework as mmf  # noqa: E402
from mm_framework.testing import load_cases  # noqa: E402
from mm_framework.testing.records import digest, ids_doc, tensor_doc  # noqa: E402
from gemma4_plugin import Gemma4Family  # noqa: E402

GOLDEN = Path(__file__).parent / "golden_video"
ACCEPTED = load_cases(GOLDEN / "cases")
REJECTED = load_cases(GOLDEN / "rejections")


def request(case) -> mmf.MmInput:
    videos = []
    for v in case.doc["videos"]:
        data = (GOLDEN / "clips" / v["file"]).read_bytes()
        assert digest(data) == v["blake3"], f"{v['file']} differs from the clip the case was made from"
        videos.append(data)
    return mmf.MmInput(images=case.images(gemma4_images.make), videos=videos, input_ids=case.doc["prompt_ids"])


def test_every_option_is_covered():
    specs = [c.doc["spec"] for c in ACCEPTED]
    assert {s["video_max_soft_tokens"] for s in specs} == {70, 140, 280, 560, 1120}
    assert {s["video_resample"] for s in specs} == {"pil_bicubic", "pil_bilinear"}
    assert {(s["video_num_frames"] is None, s["video_do_sample_frames"]) for s in specs} == {
        (False, True), (True, True), (False, False)}
    assert not all(s["video_do_rescale"] for s in specs) and len(REJECTED) == 2


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_case(case):
    want = case.doc["expected"]
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    inp = request(case)
    _, media = pipe.decode(inp)
    clips = [m for m in media if isinstance(m, mmf.plugin.VideoClip)]
    videos = case.doc["gemma4_video"]
    assert [list(c.indices) for c in clips] == [v["frames_indices"] for v in videos], "decoded frames"
    out = pipe.process(inp)
    assert ids_doc(out.input_ids) == want["input_ids"], "input_ids"
    assert [list(o) for o in out.offsets] == want["offsets"], "offsets"
    kw = out.model_kwargs()
    for key, doc in want["model_kwargs"].items():
        assert tensor_doc(doc["dtype"], kw[key]) == doc, key
    assert set(kw) == set(want["model_kwargs"])
    family = Gemma4Family({k: v for k, v in case.doc["spec"].items() if k != "family"})
    items = [it for it in out.items if it.modality == "video"]
    for it, v in zip(items, videos, strict=True):
        assert list(it.geometry.timestamps) == v["timestamps"]
        assert family.video.soft_tokens(it.geometry) == v["soft_tokens"]
        assert family.mm_expansion_text("video", it.geometry) == v["expansion_text"]
    counted = pipe.count_tokens(inp)
    assert ids_doc(counted.input_ids) == want["input_ids"] and counted.offsets == out.offsets


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    err = case.doc["expected_error"]
    with pytest.raises(getattr(mmf, err["type"]), match=rf"item {err['item']}: .*{err['match']}"):
        mmf.pipeline_from_spec(case.doc["spec"]).process(request(case))
