"""Replay of the smolvlm video goldens (made in the torchvision venv by
``generate_smolvlm_video_goldens.py`` from transformers 5.24; no torch needed here): every
case's kept frames, the batch's pixel_values and pixel_attention_mask, each video's
expansion text, and the plan from the clip's header alone, through the family's hooks (the
pipeline refuses video prompts in token ids, docs/families/smolvlm.md §7)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("av")

from mm_framework import plugin as mmp  # noqa: E402
from mm_framework.testing import load_cases  # noqa: E402
from mm_framework.testing.records import digest, tensor_doc  # noqa: E402
from smolvlm_plugin import SmolVLMFamily  # noqa: E402
from smolvlm_plugin.video import padded  # noqa: E402

GOLDEN = Path(__file__).parent / "golden_video"
CASES = load_cases(GOLDEN / "cases")
BIG = 1 << 40


def test_every_option_is_covered():
    specs = [c.doc["spec"] for c in CASES]
    assert {s["video_do_sample_frames"] for s in specs} == {True, False}
    assert {s["resample"] for s in specs} == {"pil_lanczos", "pil_bicubic", "pil_bilinear"}
    assert {s["video_fps"] for s in specs} >= {1.0, 2.0} and {s["video_num_frames"] for s in specs} >= {2, 3, 5, 64}
    assert any(s["video_size_longest_edge"] for s in specs) and not all(s["do_normalize"] for s in specs)
    assert {s["max_image_size"] for s in specs} == {32, 512} and any(len(c.doc["videos"]) > 1 for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case):
    spec = case.doc["spec"]
    family = SmolVLMFamily({k: v for k, v in spec.items() if k != "family"})
    items = []
    for v in case.doc["videos"]:
        data = (GOLDEN / "clips" / v["file"]).read_bytes()
        assert digest(data) == v["blake3"], f"{v['file']} differs from the clip the case was made from"
        headers = []
        clip = mmp.decode_clip(data, lambda h: headers.append(h) or family.mm_sample_frames(h), max_frames=BIG,
                               max_pixels=BIG)
        assert list(clip.indices) == v["frames_indices"], "kept frames"
        item = family.mm_process_item(clip)
        assert family.mm_plan_item(headers[0]) == mmp.ItemPlan(item.geometry, item.size)
        items.append(item)
    kwargs = padded([it.feature.array for it in items], spec["max_image_size"])
    for key, doc in case.doc["expected"]["model_kwargs"].items():
        assert tensor_doc(doc["dtype"], kwargs[key]) == doc, key
    geometries = [it.geometry for it in items]
    for it, v in zip(items, case.doc["videos"], strict=True):
        assert family.mm_expansion_text("video", it.geometry, geometries) == v["expansion_text"]
