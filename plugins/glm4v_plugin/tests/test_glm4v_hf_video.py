"""``mm_framework.hf.accelerate`` on GLM-4.1V's and GLM-4.6V's video processors
(``Glm4vVideoProcessor``, ``Glm46VVideoProcessor``), live against transformers 5.24: every
served call gives the reference's ``BatchFeature`` (same keys in order, tensor types, dtypes,
shapes and bytes, and the same ``video_metadata``), every call it cannot mirror goes to the
reference (the same result or error) and is counted. The processors' own ``sample_frames``
choose the frames; the family processes them with sampling off. The video processors need
torchvision; the first test (the family's hook) needs neither.
"""

from __future__ import annotations

import copy
import importlib.util

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import hf
from mm_framework.testing import assert_same_batch

from . import glm4v_reference as ref
from . import glm4v_video_cases as cases

HAS_TORCHVISION = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision"))
live = pytest.mark.skipif(not HAS_TORCHVISION, reason="transformers' video processors need torch and torchvision")
# config (glm4v_video_cases.CONFIGS) -> its video processor, built from explicit arguments.
CONFIGS = ["glm4v", "glm4v_small", "glm46v", "glm46v_tps3"]
# (frames, height, width, source fps or None: no metadata)
CLIPS = [(9, 120, 90, 25.0), (16, 64, 64, 30000 / 1001), (7, 30, 200, 2.0), (3, 40, 40, None)]

pytestmark = pytest.mark.usefixtures("mm_hf_stats")


def _clip(t: int, h: int, w: int) -> np.ndarray:
    return np.random.default_rng(t * 1000 + h * 7 + w).integers(0, 256, (t, h, w, 3), dtype=np.uint8)


def _meta(t: int, fps: float | None) -> list[dict] | None:
    return None if fps is None else [{"total_num_frames": t, "fps": fps, "frames_indices": list(range(t))}]


def _same(want, got) -> None:
    """assert_same_batch, with ``video_metadata`` (transformers' VideoMetadata objects) compared
    field by field: values and types (the sampler's indices are an array, a list without it)."""
    assert list(got.keys()) == list(want.keys()), (list(want.keys()), list(got.keys()))
    want, got = dict(want), dict(got)
    metas = want.pop("video_metadata", None), got.pop("video_metadata", None)
    assert_same_batch(want, got)
    if metas[0] is None:
        return
    assert len(metas[0]) == len(metas[1])
    for a, b in zip(*metas):
        for field in a:
            x, y = a[field], b[field]
            assert type(x) is type(y), (field, type(x), type(y))
            assert (x.tolist() == y.tolist() and x.dtype == y.dtype) if hasattr(x, "tolist") else x == y, field


def _spec(config: str) -> dict:
    model, overrides = cases.CONFIGS[config]
    return {**mmf.preset(cases.PRESETS[model]), **overrides}


def _pair(config: str):
    model, _ = cases.CONFIGS[config]
    spec = _spec(config)
    return ref.video_processor(spec, model), hf.accelerate(ref.video_processor(spec, model), strict=True)


def test_the_family_says_what_its_video_processors_return():
    """``mm_hf_video_outputs``: the video processors' two tensors for video-only items (nothing
    for images); with sampling off every frame given is used and no fps is needed."""
    pipe = mmf.pipeline_from_spec({**mmf.preset("glm4_1v_9b_thinking"), "video_sample_frames": False})
    items = pipe.process_items(mmf.MmInput(videos=[_clip(5, 56, 84), _clip(2, 40, 40)]))
    got = pipe.hf_video_outputs(items)
    assert list(got) == ["pixel_values_videos", "video_grid_thw"]
    # 5 frames padded to 6; the 2-frame clip upscaled to 2 frames of 84x84 (min_pixels 12544).
    assert got["video_grid_thw"].tolist() == [[3, 4, 6], [1, 6, 6]]
    image = pipe.process_items(mmf.MmInput(images=[_clip(1, 56, 56)[0]]))
    assert pipe.hf_video_outputs(image) is None
    with pytest.raises(mmf.MediaError, match="must be larger than temporal_factor"):
        pipe.process_items(mmf.MmInput(videos=[_clip(1, 40, 40)]))


def test_per_video_pixel_bounds_are_the_spec_fields():
    """``min_pixels`` / ``max_pixels`` per video (what the adapter serves a call's ``size`` with)
    replace ``video_min_pixels`` / ``video_max_pixels``."""
    spec = {**mmf.preset("glm4_1v_9b_thinking"), "video_sample_frames": False}
    clip = _clip(4, 120, 160)
    (got,) = mmf.pipeline_from_spec(spec).process_items(
        mmf.MmInput(videos=[mmf.Video(mmf.VideoFrames(clip), min_pixels=3136, max_pixels=40000)]))
    bounded = mmf.pipeline_from_spec({**spec, "video_min_pixels": 3136, "video_max_pixels": 40000})
    (want,) = bounded.process_items(mmf.MmInput(videos=[clip]))
    assert got.geometry == want.geometry and got.geometry.h * got.geometry.w * 14 * 14 * 4 <= 40000
    assert got.feature.array.tobytes() == want.feature.array.tobytes()


@live
@pytest.mark.parametrize("config", ["glm4v", "glm46v"])
def test_the_pipeline_with_sampling_off_matches_the_processor(config):
    """``video_sample_frames`` false in the pipeline itself: every frame, and the prompt's
    timestamps from frame 0 at the clip's fps (24 without one), as the processor called with
    ``do_sample_frames=False`` gives them: ids and every tensor."""
    from PIL import Image

    model, _ = cases.CONFIGS[config]
    tok = ref.video_tokenizer(mmf.preset(cases.PRESETS[model])["image_token_id"])
    spec = {**cases.spec(config, tok), "video_sample_frames": False}
    proc, pipe = ref.video_processor_full(spec, tok, model), mmf.pipeline_from_spec(spec)
    text = cases.prompt(["video", "image"])
    image = _clip(1, 40, 60)[0]
    for t, h, w, fps in CLIPS:
        clip = _clip(t, h, w)
        want = proc(text=[text], images=[Image.fromarray(image)], videos=[clip], video_metadata=_meta(t, fps),
                    return_tensors="pt", do_sample_frames=False)
        out = pipe.process(mmf.MmInput(images=[image], videos=[mmf.VideoFrames(clip, fps=fps)],
                                       input_ids=ref.token_ids(tok, text)))
        assert np.asarray(out.input_ids).tolist() == want["input_ids"][0].tolist(), (t, fps)
        kwargs = pipe.model_kwargs(out)
        for name in ("pixel_values_videos", "video_grid_thw", "pixel_values", "image_grid_thw"):
            assert kwargs[name].tobytes() == want[name].numpy().tobytes(), (name, t)


def _calls(config: str) -> list[dict]:
    calls = [{}, {"return_tensors": "np"}, {"return_tensors": "pt", "return_metadata": True},
             {"do_sample_frames": False, "return_metadata": True},
             {"fps": 1, "return_metadata": True}, {"num_frames": 4}, {"size": {"shortest_edge": 3136,
                                                                              "longest_edge": 60000}}]
    if config == "glm4v":  # the uint8 patches, where the defaults do not upscale every clip far
        calls.append({"do_rescale": False, "do_normalize": False, "return_tensors": "np"})
    return calls


@live
@pytest.mark.parametrize("config", CONFIGS)
def test_served_calls_equal_the_video_processor(config):
    ref_proc, acc = _pair(config)
    served = refused = 0
    # Every clip with the defaults, then one clip per call in turn.
    jobs = [({}, clip) for clip in CLIPS] + [(call, CLIPS[i % 3]) for i, call in enumerate(_calls(config))]
    for call, (t, h, w, fps) in jobs:
        video = _clip(t, h, w)
        try:
            want = ref_proc(videos=[video], video_metadata=_meta(t, fps), **call)
        except ValueError as e:  # sampling without metadata: refused alike
            with pytest.raises(ValueError) as got:
                acc(videos=[video], video_metadata=_meta(t, fps), **call)
            assert str(got.value) == str(e)
            refused += 1
            continue
        _same(want, acc(videos=[video], video_metadata=_meta(t, fps), **call))
        served += 1
    stats = hf.stats()
    assert stats["served"] == {type(ref_proc).__name__: served} and served > refused, stats
    assert sum(stats["fallbacks"].values()) == refused
    assert all("sample_frames refused (ValueError)" in k for k in stats["fallbacks"]), stats


@live
def test_input_forms_equal_the_video_processor():
    import torch
    from PIL import Image
    from transformers.video_utils import VideoMetadata

    ref_proc, acc = _pair("glm4v")
    a, b = _clip(6, 48, 80), _clip(4, 90, 60)
    forms = {
        "pil frames": ([Image.fromarray(f) for f in a], [{"total_num_frames": 6, "fps": 3.0}]),
        "channels first": (np.ascontiguousarray(a.transpose(0, 3, 1, 2)), [{"total_num_frames": 6, "fps": 3.0}]),
        "tensors, metadata objects": ([torch.from_numpy(a), torch.from_numpy(b)],
                                      [VideoMetadata(total_num_frames=6, fps=6.0, duration=1.0),
                                       VideoMetadata(total_num_frames=4, fps=2.0)]),
        "nested, as vLLM calls": ([[a]], [[VideoMetadata(total_num_frames=6, fps=3.0, frames_indices=list(range(6)))]]),
    }
    for name, (videos, meta) in forms.items():
        for call in ({"return_metadata": True}, {"do_sample_frames": False}):
            _same(ref_proc(videos=videos, video_metadata=copy.deepcopy(meta), **call),
                  acc(videos=videos, video_metadata=copy.deepcopy(meta), **call))
    assert hf.stats()["fallbacks"] == {} and hf.stats()["served"] == {"Glm4vVideoProcessor": 8}, hf.stats()


@live
@pytest.mark.parametrize("call, videos, reason", [
    ({"image_mean": [0.5, 0.5, 0.5]}, None, "option 'image_mean'"),
    ({"max_duration": 2}, None, "option 'max_duration'"),
    ({"do_rescale": False}, None, "do_rescale without do_normalize"),
    ({"size": {"height": 56, "width": 56}}, None, "size {'height': 56, 'width': 56}"),
    ({}, [np.zeros((4, 40, 50, 3), np.float32)], "a float32 video"),
    ({"do_sample_frames": False}, [np.zeros((1, 40, 50, 3), np.uint8)], "must be larger than temporal_factor"),
])
def test_unmirrored_calls_go_to_the_video_processor(call, videos, reason):
    ref_proc, acc = _pair("glm4v")
    videos = videos or [_clip(6, 50, 70)]
    meta = [{"total_num_frames": len(videos[0]), "fps": 4.0}]
    try:
        want = ref_proc(videos=videos, video_metadata=copy.deepcopy(meta), **call)
    except (ValueError, KeyError) as e:
        with pytest.raises(type(e)) as got:
            acc(videos=videos, video_metadata=copy.deepcopy(meta), **call)
        assert str(got.value) == str(e)
    else:
        _same(want, acc(videos=videos, video_metadata=copy.deepcopy(meta), **call))
    (key, count), = hf.stats()["fallbacks"].items()
    assert key.startswith("Glm4vVideoProcessor: ") and reason in key and count == 1, key
    assert hf.stats()["served"] == {}


@live
@pytest.mark.parametrize("config", ["glm4v", "glm46v"])
def test_the_whole_processor_with_videos(config):
    """Glm4vProcessor / Glm46VProcessor (the tests' small tokenizer, PIL image processor) called
    with text, an image and two videos, sampling or not, and as vLLM calls it (one nested
    video, sampled already): ids (timestamps from the returned metadata) and every tensor."""
    from transformers.video_utils import VideoMetadata

    model, _ = cases.CONFIGS[config]
    spec = _spec(config)
    tok = ref.video_tokenizer(spec["image_token_id"])
    want_proc, acc = ref.video_processor_full(spec, tok, model), ref.video_processor_full(spec, tok, model)
    assert hf.accelerate(acc) is acc and type(acc.video_processor).__name__ == "AcceleratedVideoProcessor"
    text = cases.prompt(["video", "image", "video"])
    image = _clip(1, 50, 70)[0]
    (t1, h1, w1, fps1), (t2, h2, w2, fps2) = CLIPS[:2]
    videos = [_clip(t1, h1, w1), _clip(t2, h2, w2)]
    for call in ({}, {"do_sample_frames": False}):
        meta = _meta(t1, fps1) + _meta(t2, fps2)
        _same(want_proc(text=[text], images=[image], videos=videos, video_metadata=copy.deepcopy(meta),
                        return_tensors="pt", **call),
              acc(text=[text], images=[image], videos=videos, video_metadata=copy.deepcopy(meta),
                  return_tensors="pt", **call))
    vllm = {"text": cases.VIDEO, "videos": [[videos[0]]], "do_sample_frames": False, "return_tensors": "pt",
            "video_metadata": [[VideoMetadata(total_num_frames=t1, fps=fps1, frames_indices=list(range(0, 18, 2)))]]}
    _same(want_proc(**copy.deepcopy(vllm)), acc(**copy.deepcopy(vllm)))
    stats = hf.stats()
    assert stats["served"].get(type(want_proc.video_processor).__name__) == 3 and stats["fallbacks"] == {}, stats
