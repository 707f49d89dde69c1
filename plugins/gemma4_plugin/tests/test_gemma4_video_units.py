"""Video pieces without a reference run: sampling, timestamps, the id layout against the text
it stands for, plans from headers, and the model kwargs of mixed requests."""

from __future__ import annotations

import numpy as np
import pytest

from . import gemma4_reference as ref
import mm_framework as mmf
from mm_framework import plugin as mmp
from gemma4_plugin import Gemma4Family
from gemma4_plugin.video_prompt import clock
from gemma4_plugin.video_sampling import sample_indices

SPEC = mmf.preset("gemma4")
FAMILY = Gemma4Family({k: v for k, v in SPEC.items() if k != "family"})


@pytest.mark.parametrize(("seconds", "text"), [(0.0, "00:00"), (59.99, "00:59"), (60.0, "01:00"),
                                               (3599.5, "59:59"), (6000.0, "100:00")])
def test_clock_is_the_processors_format(seconds, text):
    assert clock(seconds) == text


def test_sampling_is_default_sample_indices_fn():
    assert sample_indices(40, 10.0, num_frames=32, fps=None) == [k * 40 // 32 for k in range(32)]
    assert sample_indices(30, 12.0, num_frames=None, fps=2.0) == [0, 6, 12, 18, 24]
    assert sample_indices(6, 30000 / 1001, num_frames=None, fps=2.0) == [0]  # at least one frame
    assert sample_indices(5, None, num_frames=None, fps=None) == [0, 1, 2, 3, 4]


def test_the_id_layout_is_the_tokenized_text():
    """The expansion in ids equals the processor's text through a tokenizer shaped like Gemma's
    (spaces as "▁", one token per character, the spec's ids), minutes included."""
    tok = ref.video_tokenizer(SPEC)
    for frames, fps, total in ((3, 10.0, 40), (4, 1.0, 130), (1, None, 7)):
        header = mmp.ClipHeader(total_frames=total, fps=fps, width=64, height=48)
        spec = {k: v for k, v in SPEC.items() if k != "family"}
        family = Gemma4Family({**spec, "video_num_frames": frames})
        grid = family.mm_plan_item(header).geometry
        pattern = family.video.pattern(grid)
        text = family.mm_expansion_text("video", grid)
        assert list(pattern.ids) == tok(text, add_special_tokens=False)["input_ids"]
        start, end = pattern.content
        assert pattern.ids[start - 1] == SPEC["boi_token_id"] and pattern.ids[end] == SPEC["eoi_token_id"]
        assert pattern.ids[start] == pattern.ids[end - 1] == SPEC["video_token_id"]


def test_images_have_no_expansion_text():
    assert FAMILY.mm_expansion_text("image", mmp.Grid(1, 42, 57)) is None


def test_num_media_tokens_from_a_header():
    pipe = mmf.pipeline_from_spec(SPEC)
    # 32 frames of 64x48 at 70 tokens are 432x336 (63 tokens each); the span runs from the first
    # frame's soft tokens to the last's, each pair apart by eoi, " ", "mm:ss", " ", boi.
    assert pipe.num_media_tokens(64, 48, frames=40, fps=10.0) == 32 * 63 + 31 * 9


def test_mixed_request_model_kwargs():
    pipe = mmf.pipeline_from_spec(SPEC)
    rng = np.random.default_rng(0)
    clip = rng.integers(0, 256, (40, 24, 32, 3), dtype=np.uint8)
    image = rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)
    out = pipe.process(mmf.MmInput(images=[image], videos=[mmf.VideoFrames(clip, fps=4.0), mmf.VideoFrames(clip)],
                                   input_ids=[SPEC["video_token_id"], SPEC["image_token_id"],
                                              SPEC["video_token_id"]]))
    kw = out.model_kwargs()
    assert kw["pixel_values"].shape == (1, 2520, 768) and kw["image_position_ids"].shape == (1, 2520, 2)
    assert kw["pixel_values_videos"].shape == (64, 630, 768) and kw["video_position_ids"].shape == (64, 630, 2)
    assert kw["num_frames_per_video"].tolist() == [32, 32]
    assert isinstance(out.positions, mmp.Rope1D)
