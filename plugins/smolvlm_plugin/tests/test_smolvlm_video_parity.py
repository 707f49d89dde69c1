"""Live video parity with transformers 5.24's ``SmolVLMVideoProcessor`` and
``SmolVLMProcessor.replace_video_token`` (torchvision venv: torch, torchvision, PyAV and
num2words, the reference's own dependency; skipped elsewhere).

Fresh PyAV clips read by the reference as a user would (``load_video(path, backend="pyav")``)
and by the family's hooks from the same bytes: kept frames, pixels, the padded batch and
mask of several videos, the expansion text; decoded frame arrays with and without a rate;
the sampler over many clip lengths and rates; the frame-count words against num2words.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest

from mm_framework.testing import require_torchvision

require_torchvision()
pytest.importorskip("av")
num2words = pytest.importorskip("num2words").num2words

from . import smolvlm_clips, smolvlm_reference  # noqa: E402
import mm_framework as mmf  # noqa: E402
from mm_framework import plugin as mmp  # noqa: E402
from smolvlm_plugin import SmolVLMFamily  # noqa: E402
from smolvlm_plugin.video import padded, sample_indices  # noqa: E402
from smolvlm_plugin.words import cardinal  # noqa: E402

BIG = 1 << 40
VIDEO_ID = 49280
PRESET = {**mmf.preset("smolvlm2_500m_video_instruct"), "video_token_id": VIDEO_ID}
SMALL = {**PRESET, "size_longest_edge": 96, "max_image_size": 32, "image_seq_len": 4}
# name -> spec: every video field at least once (the preset's tile on two sampled frames).
SPECS = {
    "all_frames": SMALL,
    "fps_1_max_64": {**SMALL, "video_do_sample_frames": True},
    "fps_2_max_5": {**SMALL, "video_do_sample_frames": True, "video_fps": 2.0, "video_num_frames": 5},
    "edge_40_bicubic": {**SMALL, "video_size_longest_edge": 40, "resample": "pil_bicubic",
                        "video_do_sample_frames": True, "video_num_frames": 3},
    "preset_2_frames": {**PRESET, "video_do_sample_frames": True, "video_num_frames": 2},
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    out = {}
    for name in smolvlm_clips.CLIPS:
        path = tmp_path_factory.getbasetemp() / name
        path.write_bytes(smolvlm_clips.make(name))
        out[name] = path
    return out


def ours(spec, data: bytes):
    family = SmolVLMFamily({k: v for k, v in spec.items() if k != "family"})
    headers = []

    def choose(header):
        headers.append(header)
        return family.mm_sample_frames(header)

    clip = mmp.decode_clip(data, choose, max_frames=BIG, max_pixels=BIG)
    item = family.mm_process_item(clip)
    assert family.mm_plan_item(headers[0]) == mmp.ItemPlan(item.geometry, item.size)
    return family, clip, item


@pytest.mark.parametrize("spec_name", list(SPECS))
def test_clips_match_the_processor(spec_name, clips):
    from transformers.video_utils import load_video

    spec = SPECS[spec_name]
    proc = smolvlm_reference.video_processing(spec)
    names = list(clips) if spec_name != "preset_2_frames" else ["clip_64x48_40f_10fps.mp4"]
    loaded = [load_video(str(clips[n]), backend="pyav") for n in names]
    ref = proc.video_processor(videos=[f for f, _ in loaded], video_metadata=[copy.deepcopy(m) for _, m in loaded],
                               return_metadata=True, return_tensors="np")
    features, geometries = [], []
    for k, name in enumerate(names):
        family, clip, item = ours(spec, clips[name].read_bytes())
        meta = ref["video_metadata"][k]
        assert list(clip.indices) == [int(i) for i in meta.frames_indices], (spec_name, name)
        n = clip.num_frames
        assert item.feature.array.tobytes() == ref["pixel_values"][k, :n].tobytes(), (spec_name, name)
        features.append(item.feature.array)
        geometries.append(item.geometry)
    for k, geometry in enumerate(geometries):  # the written frame count is the batch's largest
        assert family.mm_expansion_text("video", geometry, geometries) == proc.replace_video_token(ref, k)
    kw = padded(features, spec["max_image_size"])
    for key in ("pixel_values", "pixel_attention_mask"):
        assert kw[key].dtype == ref[key].dtype and kw[key].tobytes() == ref[key].tobytes(), (spec_name, key)


def test_several_videos_write_the_batch_frame_count(clips):
    """replace_video_token writes pixel_values.shape[1], the most frames of the request's videos,
    for every video: the family's text for a video with ``frame_count`` given is the same."""
    from transformers.video_utils import load_video

    from smolvlm_plugin.family import FAKE, GLOBAL, IMAGE
    from smolvlm_plugin.video import expansion_text

    spec = SPECS["fps_2_max_5"]
    proc = smolvlm_reference.video_processing(spec)
    names = ["clip_32x48_6f_ntsc.mp4", "clip_64x48_40f_10fps.mp4"]
    loaded = [load_video(str(clips[n]), backend="pyav") for n in names]
    ref = proc.video_processor(videos=[f for f, _ in loaded], video_metadata=[m for _, m in loaded],
                               return_metadata=True, return_tensors="np")
    frame = FAKE + GLOBAL + IMAGE * spec["image_seq_len"] + FAKE
    most = ref["pixel_values"].shape[1]
    for k, name in enumerate(names):
        _, _, item = ours(spec, clips[name].read_bytes())
        assert expansion_text(item.geometry, frame, most) == proc.replace_video_token(ref, k)


@pytest.mark.parametrize("fps", [None, 25.0, 30000 / 1001])
def test_decoded_frames_match_the_processor(fps):
    spec = SPECS["all_frames"] if fps is None else SPECS["fps_2_max_5"]
    proc = smolvlm_reference.video_processing(spec)
    rng = np.random.default_rng(7)
    arr = rng.integers(0, 256, (9, 37, 61, 3), dtype=np.uint8)
    meta = None if fps is None else [{"total_num_frames": 9, "fps": fps, "duration": 9 / fps,
                                      "frames_indices": list(range(9))}]
    ref = proc.video_processor(videos=[arr], video_metadata=copy.deepcopy(meta), return_metadata=True,
                               return_tensors="np")
    family = SmolVLMFamily({k: v for k, v in spec.items() if k != "family"})
    clip = mmp.clip_from_frames(arr, fps=fps, max_frames=BIG, max_pixels=BIG)
    indices = family.mm_sample_frames(clip.header)
    if indices is not None:
        clip = mmp.select_frames(clip, indices)
    item = family.mm_process_item(clip)
    assert item.feature.array.tobytes() == ref["pixel_values"][0].tobytes()
    assert family.mm_expansion_text("video", item.geometry, [item.geometry]) == proc.replace_video_token(ref, 0)


def test_sampling_matches_sample_frames():
    import transformers
    from transformers.video_utils import VideoMetadata

    vp = transformers.SmolVLMVideoProcessor()
    rng = random.Random(16)
    for total in list(range(1, 200)) + [rng.randrange(200, 20000) for _ in range(150)]:
        for rate in (1.0, 10.0, 25.0, 30000 / 1001, 7.5):
            for fps, num in ((1, 64), (2, 5), (0.5, 200), (3.3, 17)):
                meta = VideoMetadata(total_num_frames=total, fps=rate, duration=total / rate)
                want = vp.sample_frames(meta, num_frames=num, fps=fps).tolist()
                assert sample_indices(total, rate, total / rate, num_frames=num, fps=fps) == want, (total, rate, fps)


def test_frame_count_words_equal_num2words():
    assert all(cardinal(n) == num2words(n) for n in range(20001))
    rng = random.Random(3)
    for n in [rng.randrange(10**12) for _ in range(3000)] + [10**6, 10**9, 10**12 - 1, 1001000, 1000100]:
        assert cardinal(n) == num2words(n), n


@pytest.mark.parametrize("spec_name", ["fps_2_max_5", "all_frames"])
def test_text_prompt_ids_match_the_processor(spec_name, clips):
    """The pipeline given the prompt as text and the processor's tokenizer (video prompts are
    expanded as text, docs/families/smolvlm.md §7) gives ``SmolVLMProcessor``'s ``input_ids``
    and pixels for one and for two videos (the frame count written is the batch's)."""
    from transformers.video_utils import load_video

    spec = SPECS[spec_name]
    proc = smolvlm_reference.video_processing(spec)
    for names in (["clip_64x48_40f_10fps.mp4"], ["clip_32x48_6f_ntsc.mp4", "clip_64x48_40f_10fps.mp4"]):
        text = "User: " + " and ".join(["<video>"] * len(names)) + " what happens?\nAssistant:"
        loaded = [load_video(str(clips[n]), backend="pyav") for n in names]
        ref = proc(text=[text], videos=[[f for f, _ in loaded]], video_metadata=[[m for _, m in loaded]],
                   return_tensors="np")
        out = mmf.pipeline_from_spec(spec).process(
            mmf.MmInput(videos=[clips[n].read_bytes() for n in names], text=text), tokenize=proc.tokenizer)
        assert out.input_ids.tolist() == ref["input_ids"][0].tolist(), (spec_name, names)
        kwargs = out.model_kwargs()
        for key in ("pixel_values", "pixel_attention_mask"):
            assert kwargs[key].tobytes() == ref[key].tobytes(), (spec_name, names, key)
