"""qwen_vl video through the pipeline without a reference install: decoded clips, mixed
prompts, layout errors, model kwargs, limits, thread independence and token counts
(the transformers parity of the same paths is in test_qwen_video_pipeline.py and the
live module)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import par
from qwen_vl_plugin.video_item import VideoGrid

Q2, Q25, Q3, Q35 = (mmf.preset(n) for n in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5"))
IMG, VID, START, END = 151655, 151656, 151652, 151653
RNG = np.random.default_rng(16)
GOLDEN_CLIPS = Path(__file__).parent / "golden_video" / "clips"
CLIP = RNG.integers(0, 256, (9, 60, 84, 3), dtype=np.uint8)


def pipe(spec, **kw):
    return mmf.pipeline_from_spec(spec, **kw)


def chat(*kinds, spec=Q2):
    body = []
    for kind in kinds:
        body += [START, spec["image_token_id"] if kind == "image" else spec["video_token_id"], END]
    return [151644, 872, 198, *body, 3838, 151645]


def test_decoded_clip_without_metadata_assumes_24_fps():
    # Qwen2.5: every frame, second_per_grid_ts = 2 / 24 (transformers' fps for bare arrays).
    out = pipe(Q25).process(mmf.MmInput(videos=[CLIP], input_ids=chat("video")))
    item = out.items[0]
    assert item.geometry == VideoGrid(5, 4, 6, (), float(np.float32(2 / 24)))
    assert out.model_kwargs()["second_per_grid_ts"].tobytes() == np.float32(2 / 24).tobytes()
    # Qwen3: 9 frames at 24 fps sample int(9 / 24 * 2) = 0 -> min_frames 4, over 0..8.
    out = pipe(Q3).process(mmf.MmInput(videos=[CLIP], input_ids=chat("video")))
    assert out.items[0].geometry.t == 2 and out.items[0].geometry.timestamps == ((0 + 3) / 48, (5 + 8) / 48)
    with_rate = pipe(Q3).process(mmf.MmInput(videos=[mmf.VideoFrames(CLIP, fps=24.0)], input_ids=chat("video")))
    assert with_rate.items[0].feature == out.items[0].feature and with_rate.input_ids.tolist() == out.input_ids.tolist()


def test_qwen3_prompt_doubles_the_markers_and_spans_first_to_last_pad():
    inp = mmf.MmInput(videos=[mmf.VideoFrames(CLIP, fps=10.0)], input_ids=[1, 248053, 248057, 248054, 2])
    out = pipe(Q35).process(inp)
    g = out.items[0].geometry
    pads = g.h * g.w // 4
    ids = out.input_ids.tolist()
    assert ids[:2] == [1, 248053] and ids[-3:] == [248054, 248054, 2]
    # 2 fps of 9 frames at 10 fps: 4 frames [0, 3, 5, 8]; group 0 at (0.0 + 0.3) / 2 = 0.15,
    # printed "0.1" (the double below 0.15): <0.1 seconds>.
    assert ids[2:8] == [27, 15, 13, 16, 6283, 29]
    start, end = out.offsets[0]
    assert ids[start - 1] == 248053 and ids[start] == ids[end] == 248057 and ids[end + 1] == 248054
    assert sum(t == 248057 for t in ids) == g.t * pads
    assert pipe(Q35).num_media_tokens(84, 60, frames=9, fps=10.0) == end - start + 1


def test_mixed_prompt_keeps_prompt_order_and_model_kwargs_per_modality():
    a, b = CLIP[:4], CLIP[3:]
    image = RNG.integers(0, 256, (50, 70, 3), dtype=np.uint8)
    out = pipe(Q25).process(mmf.MmInput(images=[image], videos=[a, b], input_ids=chat("video", "image", "video")))
    assert [it.modality for it in out.items] == ["video", "image", "video"]
    assert [s for s, _ in out.offsets] == sorted(s for s, _ in out.offsets)
    kw = out.model_kwargs()
    assert set(kw) == {"pixel_values", "image_grid_thw", "pixel_values_videos", "video_grid_thw", "second_per_grid_ts"}
    assert kw["video_grid_thw"].tolist() == [[2, 4, 6], [3, 4, 6]] and kw["image_grid_thw"].tolist() == [[1, 4, 4]]
    np.testing.assert_array_equal(kw["pixel_values_videos"][:48], out.items[0].feature.array)
    assert kw["second_per_grid_ts"].shape == (2,) and kw["pixel_values"].shape == (16, 1176)
    video_only = pipe(Q2).process(mmf.MmInput(videos=[a], input_ids=chat("video"))).model_kwargs()
    assert set(video_only) == {"pixel_values_videos", "video_grid_thw"}  # Qwen2-VL has no second_per_grid_ts


@pytest.mark.parametrize(("videos", "images", "ids", "match"), [
    ([CLIP], [], chat("video", "video"), "2 video placeholder"),
    ([CLIP, CLIP], [], chat("video"), "1 video placeholder"),
    ([CLIP], [], chat("image", "video"), "1 image placeholder"),
])
def test_layout_errors(videos, images, ids, match):
    with pytest.raises(mmf.LayoutError, match=match):
        pipe(Q2).process(mmf.MmInput(images=images, videos=videos, input_ids=ids))


def test_qwen3_refuses_a_single_frame_and_qwen2_sampling_a_too_short_clip():
    with pytest.raises(mmf.MediaError, match="item 0: video: t:1 must be larger than temporal_factor:2"):
        pipe(Q3).process(mmf.MmInput(videos=[CLIP[:1]], input_ids=chat("video")))
    with pytest.raises(mmf.MediaError, match="t:1 must be larger"):
        pipe(Q3).num_media_tokens(84, 60, frames=1, fps=10.0)
    fps2 = {**Q2, "video_sample_frames": True, "video_fps": 2, "video_min_frames": 4, "video_max_frames": 768}
    with pytest.raises(mmf.MediaError, match="item 1: video: a clip of 1 frame"):
        pipe(fps2).process(mmf.MmInput(images=[CLIP[0]], videos=[mmf.VideoFrames(CLIP[:1], fps=10.0)],
                                       input_ids=chat("image", "video")))


def test_frame_limit_counts_the_sampled_frames_of_an_encoded_clip():
    pytest.importorskip("av")
    data = (GOLDEN_CLIPS / "x264_yuv420p_32x24_56f_12fps.mp4").read_bytes()
    limits = mmf.Limits(max_video_frames=20)
    # Qwen3 at 2 fps keeps 9 of the 56 frames: within the limit; Qwen2-VL keeps all 56.
    out = pipe(Q3, limits=limits).process(mmf.MmInput(videos=[data], input_ids=chat("video")))
    assert out.items[0].geometry.t == 5
    with pytest.raises(mmf.LimitExceededError, match="item 0: video: 56 frames, above the limit of 20"):
        pipe(Q2, limits=limits).process(mmf.MmInput(videos=[data], input_ids=chat("video")))
    with pytest.raises(mmf.LimitExceededError, match="item 0: video: 9 frames of 32x24"):
        pipe(Q3, limits=mmf.Limits(max_video_pixels=9 * 32 * 24 - 1)).process(
            mmf.MmInput(videos=[data], input_ids=chat("video")))


def test_output_is_identical_inline_and_threaded():
    clip = RNG.integers(0, 256, (12, 300, 420, 3), dtype=np.uint8)
    image = RNG.integers(0, 256, (90, 120, 3), dtype=np.uint8)
    req = mmf.MmInput(images=[image], videos=[mmf.VideoFrames(clip, fps=6.0)], input_ids=chat("image", "video"))
    outs = []
    try:
        for mode in ("inline", 1, 2):
            par.set_threads(mode)
            outs.append(pipe(Q25).process(req))
    finally:
        par.set_threads(None)
    assert outs[0] == outs[1] == outs[2]


@pytest.mark.parametrize("spec", [Q2, Q25, Q3, Q35], ids=["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5"])
@pytest.mark.parametrize(("frames", "h", "w", "fps"), [(2, 28, 28, 10.0), (9, 60, 84, None), (31, 33, 95, 29.97),
                                                        (64, 17, 40, 12.0)])
def test_token_count_and_plan_equal_processing(spec, frames, h, w, fps):
    clip = RNG.integers(0, 256, (frames, h, w, 3), dtype=np.uint8)
    p = pipe(spec)
    req = mmf.MmInput(videos=[mmf.VideoFrames(clip, fps=fps)], input_ids=chat("video", spec=spec))
    out, counted = p.process(req), p.count_tokens(req)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.positions == out.positions
    assert counted.items[0].geometry == out.items[0].geometry
    assert counted.items[0].processed_size == out.items[0].processed_size
    start, end = out.offsets[0]
    assert p.num_media_tokens(w, h, frames=frames, fps=fps) == end - start + 1
