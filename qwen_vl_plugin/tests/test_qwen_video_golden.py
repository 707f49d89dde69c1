"""Replay of the transformers video goldens (``golden_video/``) with the phase-1 functions.

Needs no torch. Tests that decode a clip need PyAV and skip (visibly) without it; the
sampling, prompt, ``second_per_grid_ts`` and M-RoPE checks start from the recorded
header, indices and grids, so they run everywhere.
"""

from __future__ import annotations

import importlib.util
import re

import numpy as np
import pytest

import mm_framework as mmf
from .qwen_video_replay import (
    CASES, GOLDEN, PROMPT_FIELDS, compare, header_of, load, prompt_and_positions, replay, sample,
)

ACCEPTED = [p for p in CASES if "expected" in load(p)]
REJECTED = [p for p in CASES if "expected_error" in load(p)]
HAS_AV = importlib.util.find_spec("av") is not None
needs_av = pytest.mark.skipif(not HAS_AV, reason="decoding a clip needs PyAV (mm-framework[video])")
ids = lambda p: p.stem  # noqa: E731


def test_goldens_cover_every_clip_and_configuration():
    configs = {load(p)["config"] for p in CASES}
    assert configs == {"qwen2_vl", "qwen2_vl_fps2", "qwen2_5_vl", "qwen2_5_vl_fps2", "qwen3_vl", "qwen3_vl_defaults",
                       "qwen3_vl_small", "qwen3_5"}
    clips = {p.name for p in (GOLDEN / "clips").iterdir()}
    for config in configs:
        assert {load(p)["clip"]["file"] for p in CASES if load(p)["config"] == config} == clips
    mixed = [p for p in ACCEPTED if "-mixed-" in p.name]
    assert len(mixed) == 2 * len(configs) and len(ACCEPTED) >= 80 and len(REJECTED) >= 50


def test_goldens_record_the_reference_versions():
    for p in CASES:
        prov = load(p)["provenance"]
        assert prov["transformers"] == "5.24.0", p.name
        assert {"torch", "torchvision", "pyav", "ffmpeg", "pillow", "numpy"} <= set(prov), p.name


@pytest.mark.parametrize("path", ACCEPTED, ids=ids)
def test_sampled_indices(path):
    case = load(path)
    header = header_of(case)
    indices, _ = sample(case["video"], header.total_frames, header.fps)
    if indices is None:  # every frame, as many as the stream really had
        indices = list(range(min(header.total_frames, len(case["expected"]["indices"]))))
    assert indices == case["expected"]["indices"]


@pytest.mark.parametrize("path", ACCEPTED, ids=ids)
def test_prompt_ids_second_per_grid_and_positions(path):
    case = load(path)
    exp = case["expected"]
    header = header_of(case)
    _, fps = sample(case["video"], header.total_frames, header.fps)
    # Every frame of a short stream: the frames it had are the whole clip (§2).
    total = header.total_frames if case["video"]["do_sample_frames"] else len(exp["indices"])
    grid, image_grids = exp["video_grid_thw"][0], exp.get("image_grid_thw", [])
    ours = prompt_and_positions(case, exp["indices"], total, fps, grid, image_grids)
    compare(ours, exp, case["name"], PROMPT_FIELDS)


@needs_av
@pytest.mark.parametrize("path", ACCEPTED, ids=ids)
def test_replay_byte_exact(path):
    case = load(path)
    ours, pv = replay(case)
    blob = case["expected"]["pixel_values_videos"].get("blob")
    if blob is not None:
        shape = case["expected"]["pixel_values_videos"]["shape"]
        want = np.fromfile(GOLDEN / "blobs" / blob, dtype="<f4").reshape(shape)
        bad = np.flatnonzero(pv.reshape(-1).view(np.uint32) != want.reshape(-1).view(np.uint32))
        assert bad.size == 0, f"pixel_values_videos differ first at flat index {bad[:1]}"
    compare(ours, case["expected"], case["name"])


@needs_av
@pytest.mark.parametrize("path", REJECTED, ids=ids)
def test_rejection(path):
    case = load(path)
    err = case["expected_error"]
    assert case["reference_error"].split(": ", 1)[0] in ("load_video", "processor")
    with pytest.raises(getattr(mmf, err["type"]), match=re.escape(err["match"])):
        replay(case)

