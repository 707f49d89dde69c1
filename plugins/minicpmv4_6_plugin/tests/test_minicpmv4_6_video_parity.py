"""Live video parity against transformers 5.24's MiniCPMV4_6Processor and
MiniCPMV4_6VideoProcessor (torchvision venv only; skipped elsewhere): frame sampling over
many clip lengths and rates, freshly encoded clips next to an image, decoded frames, and
the reference's refusals."""

from __future__ import annotations

import copy
import os
import tempfile

import numpy as np
import pytest

from mm_framework.testing import require_torchvision

require_torchvision()
pytest.importorskip("av")

import mm_framework as mmf  # noqa: E402
from minicpmv4_6_plugin.video import composite, sample_indices  # noqa: E402

from . import minicpmv4_6_reference as ref  # noqa: E402

VID, IMG = "<|video_pad|>", "<|image_pad|>"


def test_sampling_matches_sample_frames():
    from transformers import MiniCPMV4_6VideoProcessor
    from transformers.video_utils import VideoMetadata

    vp = MiniCPMV4_6VideoProcessor()
    for total in list(range(1, 40)) + [53, 61, 89, 301, 997, 2400]:
        for fps in (1.0, 0.5, 2.5, 10.0, 24.0, 30000 / 1001):
            for cap, stack in ((2, 1), (7, 1), (128, 1), (2, 3), (7, 5), (128, 2)):
                meta = VideoMetadata(total_num_frames=total, fps=fps, duration=total / fps)
                want = list(vp.sample_frames(meta, max_num_frames=cap, stack_frames=stack))
                assert sample_indices(total, fps, total / fps, cap, stack) == want, (total, fps, cap, stack)


def test_canvases_match_concat_frames_as_image():
    import torch
    from transformers import MiniCPMV4_6VideoProcessor

    vp = MiniCPMV4_6VideoProcessor()
    rng = np.random.default_rng(3)
    for count in range(1, 8):
        for h, w in ((10, 30), (30, 10), (12, 12), (7, 20), (20, 7), (16, 22)):
            frames = rng.integers(0, 256, (count, h, w, 3), dtype=np.uint8)
            want = vp.concat_frames_as_image(torch.from_numpy(frames).permute(0, 3, 1, 2))[0].permute(1, 2, 0)
            assert composite(frames).tobytes() == want.numpy().tobytes(), (count, h, w)


def _load(data: bytes):
    from transformers.video_utils import load_video

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "clip.mp4")
        with open(path, "wb") as f:
            f.write(data)
        return load_video(path, backend="pyav")


@pytest.mark.parametrize(("changes", "backend"), [
    ({}, "pil"), ({"video_scale_resolution": 112}, "torchvision"),
    ({"video_downsample_mode": "4x", "use_image_id": False}, "pil"),
    ({"video_scale_resolution": 112, "video_stack_frames": 4}, "pil"),
    ({"video_scale_resolution": 112, "video_stack_frames": 5, "video_max_num_frames": 1}, "torchvision"),
])
def test_clips_next_to_an_image_match_the_processor(changes, backend):
    from PIL import Image

    spec = {**mmf.preset("minicpm_v_4_6"), **changes, "backend": backend}
    proc = ref.video_capable_processor(spec)
    clips = [ref.make_clip(7, 150, 90, 4, 5), ref.make_clip(11, 48, 64, 5, 6)]
    loaded = [_load(c) for c in clips]
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (300, 520, 3), dtype=np.uint8)
    text = f"User: {VID} then {IMG} and {VID} compare them."
    r = proc(text=[text], images=[Image.fromarray(image)], videos=[f for f, _ in loaded],
             video_metadata=[m for _, m in loaded], return_tensors="pt")
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=[image], videos=clips, input_ids=proc.tokenizer(text)["input_ids"]))
    assert out.input_ids.tolist() == r["input_ids"][0].tolist()
    kw = out.model_kwargs()
    assert sorted(kw) == sorted(k for k in r if k not in ("input_ids", "attention_mask"))
    for name in kw:
        assert kw[name].tobytes() == r[name].numpy().tobytes(), name


def test_decoded_frames_match_the_processor():
    spec = {**mmf.preset("minicpm_v_4_6"), "video_scale_resolution": 112}
    proc = ref.video_capable_processor(spec)
    frames = np.random.default_rng(2).integers(0, 256, (11, 70, 130, 3), dtype=np.uint8)
    text = f"{VID} x"
    ids = proc.tokenizer(text)["input_ids"]
    meta = {"total_num_frames": 11, "fps": 4.0, "duration": 11 / 4.0}
    r = proc(text=[text], videos=[frames], video_metadata=[copy.deepcopy(meta)], return_tensors="pt")
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(videos=[mmf.VideoFrames(frames, fps=4.0)], input_ids=ids))
    assert out.input_ids.tolist() == r["input_ids"][0].tolist()
    assert out.model_kwargs()["pixel_values_videos"].tobytes() == r["pixel_values_videos"].numpy().tobytes()
    # Without a rate the reference cannot sample (ValueError); neither can we.
    with pytest.raises(ValueError, match="complete video metadata"):
        proc(text=[text], videos=[frames], return_tensors="pt")
    with pytest.raises(mmf.MediaError, match="frame rate"):
        pipe.process(mmf.MmInput(videos=[mmf.VideoFrames(frames)], input_ids=ids))


def test_item_options_match_the_call_kwargs():
    """``mmf.Video(src, **options)`` against the same options as the processor's videos_kwargs."""
    spec = {**mmf.preset("minicpm_v_4_6"), "video_scale_resolution": 112}
    proc = ref.video_capable_processor(spec)
    clip = ref.make_clip(11, 150, 90, 4, 7)
    frames, meta = _load(clip)
    options = {"max_num_frames": 2, "stack_frames": 3, "downsample_mode": "4x", "max_slice_nums": 2}
    text = f"{VID} x"
    r = proc(text=[text], videos=[frames], video_metadata=[meta], videos_kwargs=dict(options), return_tensors="pt")
    out = mmf.pipeline_from_spec(spec).process(
        mmf.MmInput(videos=[mmf.Video(clip, **options)], input_ids=proc.tokenizer(text)["input_ids"]))
    assert out.input_ids.tolist() == r["input_ids"][0].tolist()
    kw = out.model_kwargs()
    for name in ("pixel_values_videos", "target_sizes_videos"):
        assert kw[name].tobytes() == r[name].numpy().tobytes(), name
