"""The video goldens replayed through the real pipeline: ``Pipeline.process`` and
``model_kwargs()`` against transformers 5.24's recorded outputs (``golden_video/``).

Every accepted clip x configuration (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5 ids),
alone and in an (image, video, image) prompt, must give the reference's expanded ids,
``pixel_values_videos`` (bit for bit, byte-compared where the raw blob is kept),
``video_grid_thw``, ``second_per_grid_ts`` (f32 bits), the images' ``image_grid_thw`` and
``pixel_values``, and the M-RoPE positions and delta; the token count without pixels must
agree. Every clip the reference rejects must be rejected with the typed error its
case names, at the video's item index. Needs PyAV (skipped visibly without it), no torch.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re

import numpy as np
import pytest

import mm_framework as mmf
from .qwen_video_replay import CASES, GOLDEN, compare, load, output_doc, request, spec_for

ACCEPTED = [p for p in CASES if "expected" in load(p)]
REJECTED = [p for p in CASES if "expected_error" in load(p)]
FIELDS = ("pixel_values_videos", "video_grid_thw", "second_per_grid_ts", "image_grid_thw", "pixel_values",
          "input_ids_rle", "positions")
pytestmark = pytest.mark.skipif(importlib.util.find_spec("av") is None,
                                reason="decoding a clip needs PyAV (mm-framework[video])")


@functools.lru_cache(maxsize=None)
def pipeline(spec_json: str) -> mmf.Pipeline:
    return mmf.pipeline_from_spec(spec_json)


def case_pipeline(case: dict) -> mmf.Pipeline:
    # Video frames ignore the image backend (transformers has only a torchvision video
    # path): video-only prompts run on the Pillow backend, mixed ones on torchvision like
    # the reference's images.
    return pipeline(json.dumps(spec_for(case, "torchvision" if case["images"] else "pil")))


def test_every_configuration_and_mixed_prompt_is_replayed():
    configs = {load(p)["config"] for p in ACCEPTED}
    assert {"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5"} <= configs
    mixed = {load(p)["config"] for p in ACCEPTED if load(p)["images"]}
    assert mixed == configs


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: p.stem)
def test_pipeline_equals_the_reference(path):
    case = load(path)
    pipe = case_pipeline(case)
    out = pipe.process(request(case))
    video = len(case["images"]) // 2  # prompt order: (video) or (image, video, image)
    assert [it.modality for it in out.items] == ["image"] * video + ["video"] + ["image"] * video
    blob = case["expected"]["pixel_values_videos"].get("blob")
    if blob is not None:
        want = np.fromfile(GOLDEN / "blobs" / blob, dtype="<f4")
        got = out.items[video].feature.array.reshape(-1)
        bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        assert bad.size == 0, f"pixel_values_videos differ first at flat index {bad[:1]}"
    compare(output_doc(out), case["expected"], case["name"], FIELDS)
    header = case["header"]
    if case["video"]["do_sample_frames"] or len(case["expected"]["indices"]) == header["total_frames"]:
        # From the header alone (a stream shorter than its header is only known by decoding).
        counted = pipe.count_tokens(request(case))
        assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.positions == out.positions
        start, end = out.offsets[video]
        size = header["width"], header["height"]
        tokens = pipe.num_media_tokens(*size, frames=header["total_frames"], fps=header["fps"])
        assert tokens == end - start + 1


@pytest.mark.parametrize("path", REJECTED, ids=lambda p: p.stem)
def test_pipeline_rejects_what_the_reference_rejects(path):
    case = load(path)
    err = case["expected_error"]
    with pytest.raises(getattr(mmf, err["type"]), match=re.escape(err["match"])) as info:
        case_pipeline(case).process(request(case))
    assert info.value.item == len(case["images"]) and str(info.value).startswith(f"item {info.value.item}: ")
