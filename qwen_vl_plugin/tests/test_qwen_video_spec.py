"""The qwen_vl video spec fields: each validated with a SpecError naming it, the
cross-field rules, and a spec without video fields refusing videos."""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from qwen_vl_plugin import QwenVlFamily
from qwen_vl_plugin.video_spec import TIMESTAMP_PIECES

Q2 = mmf.preset("qwen2_vl")
Q25 = mmf.preset("qwen2_5_vl")
Q3 = mmf.preset("qwen3_vl")
IMAGE_ONLY = {k: v for k, v in Q2.items() if not k.startswith("video_")}


def build(base, **changes):
    spec = {**copy.deepcopy(base), **changes}
    return mmf.pipeline_from_spec({k: v for k, v in spec.items() if v is not ...})


@pytest.mark.parametrize(("base", "field", "value"), [
    (Q2, "video_processor", "qwen4"),
    (Q2, "video_processor", 2),
    (Q2, "video_token_id", -1),
    (Q2, "video_token_id", "151656"),
    (Q2, "video_token_id", True),
    (Q2, "video_min_pixels", 0),
    (Q2, "video_max_pixels", 1.5),
    (Q2, "video_sample_frames", 1),
    (Q3, "video_fps", 0),
    (Q3, "video_fps", float("nan")),
    (Q3, "video_fps", "2"),
    (Q3, "video_min_frames", 0),
    (Q3, "video_max_frames", 2.0),
    (Q25, "tokens_per_second", 0),
    (Q25, "tokens_per_second", 2.5),
    (Q3, "vision_start_token_id", -5),
    (Q3, "vision_end_token_id", "x"),
    (Q3, "timestamp_token_ids", [27, 15]),
    (Q3, "timestamp_token_ids", {"<": 27}),
    (Q3, "timestamp_token_ids", {**Q3["timestamp_token_ids"], ".": -1}),
    (Q3, "timestamp_token_ids", {**Q3["timestamp_token_ids"], "0": True}),
])
def test_bad_video_field_is_a_spec_error_naming_it(base, field, value):
    with pytest.raises(mmf.SpecError, match=f"'{field}'"):
        build(base, **{field: value})


@pytest.mark.parametrize(("base", "changes", "named", "why"), [
    # Every other video field needs the video processor.
    (IMAGE_ONLY, {"video_token_id": 151656}, "video_token_id", "'video_processor' is not"),
    (Q2, {"video_processor": ...}, "video_token_id", "'video_processor' is not"),
    # What a video processor needs.
    (Q2, {"video_max_pixels": ...}, "video_max_pixels", "is required"),
    (Q2, {"video_sample_frames": ...}, "video_sample_frames", "is required"),
    (Q2, {"video_sample_frames": True, "video_min_frames": 4, "video_max_frames": 768}, "video_fps", "is required"),
    (Q3, {"vision_end_token_id": ...}, "vision_end_token_id", "is required"),
    (Q3, {"timestamp_token_ids": ...}, "timestamp_token_ids", "is required"),
    # Fields that would do nothing are refused.
    (Q2, {"video_fps": 2.0}, "video_fps", "no effect when video_sample_frames is false"),
    (Q3, {"video_sample_frames": False}, "video_fps", "no effect when video_sample_frames is false"),
    (Q2, {"vision_start_token_id": 151652}, "vision_start_token_id", "no effect with video_processor 'qwen2'"),
    (Q3, {"tokens_per_second": 2}, "tokens_per_second", "Qwen2.5-VL's"),
    # The pixel bounds, as the image ones.
    (Q2, {"video_min_pixels": 20000, "video_max_pixels": 10000}, "video_min_pixels", "must not exceed"),
    (Q3, {"video_max_pixels": 1000}, "video_max_pixels", "at least"),
    # One id, one role.
    (Q2, {"video_token_id": 151655}, "video_token_id", "must differ from 'image_token_id'"),
    (Q3, {"vision_end_token_id": 151652}, "vision_end_token_id", "must differ from 'vision_start_token_id'"),
])
def test_cross_field_rules(base, changes, named, why):
    with pytest.raises(mmf.SpecError, match=f"'{named}'.*{why}"):
        build(base, **changes)


def test_valid_variants_round_trip():
    # Qwen3 sampling without a rate takes transformers' fps=None rule; Qwen2 may sample at 2 fps.
    for spec in ({**{k: v for k, v in Q3.items() if k != "video_fps"}},
                 {**Q2, "video_sample_frames": True, "video_fps": 2, "video_min_frames": 4, "video_max_frames": 768},
                 {k: v for k, v in Q3.items() if k not in ("video_fps", "video_min_frames", "video_max_frames")}
                 | {"video_sample_frames": False}):
        family = QwenVlFamily({k: v for k, v in spec.items() if k != "family"})
        assert family.spec.to_dict() == {**spec, **({"video_fps": 2.0} if spec.get("video_fps") == 2 else {})}
    assert set(Q3["timestamp_token_ids"]) == set(TIMESTAMP_PIECES)


def test_a_spec_without_video_fields_refuses_videos():
    pipe = mmf.pipeline_from_spec(IMAGE_ONLY)
    assert not pipe.capabilities.video
    clip = np.zeros((2, 28, 28, 3), np.uint8)
    with pytest.raises(mmf.UnsupportedError, match="item 0: family 'qwen_vl' does not take video"):
        pipe.process(mmf.MmInput(videos=[clip], input_ids=[151656]))
    with pytest.raises(mmf.UnsupportedError, match="family 'qwen_vl' does not take video: frames and fps"):
        pipe.num_media_tokens(28, 28, frames=2, fps=1.0)
    # Its image outputs are the video-capable preset's.
    img = mmf.pipeline_from_spec(Q2)
    frame = np.random.default_rng(1).integers(0, 256, (40, 60, 3), np.uint8)
    a = pipe.process(mmf.MmInput(images=[frame], input_ids=[1, Q2["image_token_id"], 2]))
    b = img.process(mmf.MmInput(images=[frame], input_ids=[1, Q2["image_token_id"], 2]))
    assert a.items == b.items and a.input_ids.tolist() == b.input_ids.tolist() and a.positions == b.positions


def test_placeholder_texts_follow_the_modalities():
    assert mmf.pipeline_from_spec(IMAGE_ONLY).capabilities.placeholder_texts == {"image": "<|image_pad|>"}
    caps = mmf.pipeline_from_spec(Q2).capabilities
    assert caps.placeholder_texts == {"image": "<|image_pad|>", "video": "<|video_pad|>"}
    assert caps.placeholders == {"image": Q2["image_token_id"], "video": Q2["video_token_id"]}


def test_a_half_set_spec_names_every_missing_field_in_one_error():
    with pytest.raises(mmf.SpecError) as e:
        build(Q25, video_sample_frames=True, video_min_pixels=...)
    assert str(e.value) == ("qwen_vl spec: fields 'video_min_pixels', 'video_fps' are required: 'video_min_pixels' "
                            "when 'video_processor' is set; 'video_fps' when video_sample_frames is true "
                            "(video_processor 'qwen2')")
    with pytest.raises(mmf.SpecError) as e:
        build(Q3, vision_end_token_id=..., timestamp_token_ids=...)
    assert str(e.value) == ("qwen_vl spec: fields 'vision_end_token_id', 'timestamp_token_ids' are required with "
                            "video_processor 'qwen3'")


@pytest.mark.parametrize("base", [Q2, Q3])
def test_sampling_without_frame_bounds_takes_the_class_defaults(base):
    """transformers' video processors sample between their class attributes min_frames=4 and
    max_frames=768 when their config names no bounds."""
    sampling = {**base, "video_sample_frames": True, "video_fps": 2.0}
    spec = {k: v for k, v in sampling.items() if k not in ("video_min_frames", "video_max_frames")}
    family = QwenVlFamily({k: v for k, v in spec.items() if k != "family"})
    assert (family.spec.video.min_frames, family.spec.video.max_frames) == (4, 768)
    explicit = mmf.pipeline_from_spec({**spec, "video_min_frames": 4, "video_max_frames": 768})
    assert mmf.pipeline_from_spec(spec).num_media_tokens(64, 48, frames=300, fps=30.0) == \
        explicit.num_media_tokens(64, 48, frames=300, fps=30.0)


def test_the_readme_fps_sampling_spec_samples_at_2_fps():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    fields = re.search(r'spec = \{\*\*mmf\.preset\("qwen2_5_vl"\),\s*(.*?)\}', readme, re.S)
    assert fields, "README.md lost its Qwen2.5-VL fps sampling spec"
    spec = {**Q25, **ast.literal_eval("{" + fields.group(1) + "}")}
    pipe = mmf.pipeline_from_spec(spec)
    every_frame = mmf.pipeline_from_spec(Q25).num_media_tokens(320, 240, frames=300, fps=30.0)
    assert pipe.num_media_tokens(320, 240, frames=300, fps=30.0) * 15 == every_frame  # 20 frames of 300
    with pytest.raises(mmf.SpecError, match="field 'video_fps' is required"):
        mmf.pipeline_from_spec({k: v for k, v in spec.items() if k != "video_fps"})
