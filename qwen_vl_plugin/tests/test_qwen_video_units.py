"""Unit tests of the qwen_vl video functions, pinned to the worked values of
docs/families/qwen_vl_video.md (each verified against transformers 5.24; the live test
module re-checks them exhaustively when torch is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import par
from mm_framework.kernels import native, normalize_lut_fused, resize_rgb
from qwen_vl_plugin.mrope import rope_index
from qwen_vl_plugin.video import (
    qwen2_frame_size,
    qwen3_frame_size,
    second_per_grid_t,
    video_norm,
)
from qwen_vl_plugin.video_prompt import (
    QWEN2_TIMESTAMPS,
    QWEN3_5_TIMESTAMPS,
    group_timestamps,
    qwen2_video_tokens,
    qwen3_video_ids,
)
from qwen_vl_plugin.video_sampling import qwen2_sample_indices, qwen3_sample_indices

# ----------------------------------------------------------------------------- sampling


def test_qwen2_sampling_examples():
    assert qwen2_sample_indices(30, 10.0, fps=2) == [0, 5, 10, 15, 20, 25]
    # num_frames is rounded half-even to a multiple of 2: 7 -> 8, 5 -> 4.
    assert qwen2_sample_indices(30, 10.0, num_frames=7) == [0, 3, 7, 11, 15, 18, 22, 26]
    assert qwen2_sample_indices(30, 10.0, num_frames=5) == [0, 7, 15, 22]
    # Short clips: max_frames floors to the clip, min_frames is then capped by it.
    assert qwen2_sample_indices(3, 10.0, fps=2) == [0, 1]
    assert qwen2_sample_indices(2, 10.0, fps=2) == [0, 1]
    assert qwen2_sample_indices(7, 25.0, fps=2) == [0, 1, 3, 5]
    # 66 frames at 10 fps: 13.2 -> 12 frames at step 5.5.
    assert qwen2_sample_indices(66, 10.0, fps=2) == [0, 5, 11, 16, 22, 27, 33, 38, 44, 49, 55, 60]


def test_qwen2_sampling_overshoot_and_short_clips_are_refused():
    # The float-step arange has an extra value that rounds up to the frame count.
    with pytest.raises(mmf.MediaError, match="overshoots: it picks frame 17 of a 17-frame clip"):
        qwen2_sample_indices(17, 10.0, num_frames=14)
    with pytest.raises(mmf.MediaError, match="overshoots: it picks frame 75 of a 75-frame clip"):
        qwen2_sample_indices(75, 10.0, fps=2)
    with pytest.raises(mmf.MediaError, match="too short"):
        qwen2_sample_indices(1, 10.0, fps=2)
    with pytest.raises(mmf.MediaError, match="cannot sample 40 frames from a clip of 30"):
        qwen2_sample_indices(30, 10.0, num_frames=40)
    with pytest.raises(mmf.MediaError, match="source fps"):
        qwen2_sample_indices(30, None, fps=2)
    for kw in ({}, {"fps": 2, "num_frames": 4}):
        with pytest.raises(mmf.SpecError, match="exactly one of fps and num_frames"):
            qwen2_sample_indices(30, 10.0, **kw)


@pytest.mark.parametrize("total", [2, 3, 9, 17, 30, 31, 100, 301, 999])
def test_qwen2_sampling_shape(total):
    for fps in (1.0, 2.0, 3.3):
        for rate in (7.5, 10.0, 25.0, 30000 / 1001):
            try:
                idx = qwen2_sample_indices(total, rate, fps=fps)
            except mmf.MediaError as e:
                assert "overshoots" in str(e)
                continue
            assert idx == sorted(set(idx)) and 0 <= idx[0] and idx[-1] < total and len(idx) % 2 in (0, 1)


def test_qwen3_sampling_examples():
    assert qwen3_sample_indices(30, 10.0) == ([0, 6, 12, 17, 23, 29], 10.0)
    # linspace(0, 29, 5) = 0, 7.25, 14.5, 21.75, 29: 14.5 rounds half to even.
    assert qwen3_sample_indices(30, 12.0)[0] == [0, 7, 14, 22, 29]
    # No source rate: 24 fps is assumed and returned (the timestamps use it).
    assert qwen3_sample_indices(30, None) == ([0, 10, 19, 29], 24.0)
    # Fewer frames than min_frames: all of them; one frame: one index (the sizing refuses it).
    assert qwen3_sample_indices(3, 10.0)[0] == [0, 1, 2]
    assert qwen3_sample_indices(1, 10.0)[0] == [0]
    assert qwen3_sample_indices(10_000, 30.0, max_frames=8)[0] == [0, 1428, 2857, 4285, 5714, 7142, 8571, 9999]
    # Without fps the count is min(max(total, min_frames), max_frames), which can repeat frames.
    assert qwen3_sample_indices(3, 10.0, fps=None)[0] == [0, 1, 1, 2]
    assert qwen3_sample_indices(30, 10.0, fps=None, num_frames=3)[0] == [0, 14, 29]
    with pytest.raises(mmf.SpecError):
        qwen3_sample_indices(30, 10.0, fps=2, num_frames=4)


# ----------------------------------------------------------------------------- sizing


def test_frame_sizes():
    # §8: 320x240 frames, Qwen2 class defaults upscale to the 100352 minimum; hub bounds.
    assert qwen2_frame_size(240, 320, factor=28, min_pixels=100352, max_pixels=602112) == (280, 392)
    assert qwen2_frame_size(240, 320, factor=28, min_pixels=3136, max_pixels=12845056) == (252, 308)
    # Qwen3: the budget is over all frames; 32 frames of 720p on the hub budget.
    assert qwen3_frame_size(32, 720, 1280, factor=32, temporal_factor=2, min_pixels=4096,
                            max_pixels=25165824) == (640, 1152)
    assert qwen3_frame_size(6, 240, 320, factor=32, temporal_factor=2, min_pixels=131072,
                            max_pixels=786432) == (256, 320)
    # Tiny frames are scaled up to the factor first (int truncation), then budgeted.
    assert qwen3_frame_size(4, 10, 20, factor=32, temporal_factor=2, min_pixels=4096, max_pixels=25165824) == (32, 64)
    with pytest.raises(mmf.MediaError, match="t:1 must be larger than temporal_factor:2"):
        qwen3_frame_size(1, 240, 320, factor=32, temporal_factor=2, min_pixels=4096, max_pixels=25165824)
    with pytest.raises(mmf.MediaError, match="aspect ratio"):
        qwen3_frame_size(4, 40, 8100, factor=32, temporal_factor=2, min_pixels=4096, max_pixels=25165824)
    with pytest.raises(mmf.SpecError):
        qwen3_frame_size(4, 40, 80, factor=0, temporal_factor=2, min_pixels=4096, max_pixels=25165824)


def test_grid_pads_the_frame_count():
    assert mmp.video_patches.grid(30, 280, 392, patch_size=14, temporal_patch_size=2) == (15, 20, 28)
    assert mmp.video_patches.grid(29, 280, 392, patch_size=14, temporal_patch_size=2) == (15, 20, 28)
    assert mmp.video_patches.grid(1, 64, 64, patch_size=16, temporal_patch_size=2) == (1, 4, 4)


def test_resize_frame_keeps_equal_sizes():
    frame = np.random.default_rng(1).integers(0, 256, (28, 56, 3), dtype=np.uint8)
    assert mmp.video_patches.resize_frame(frame, 28, 56) is frame
    assert mmp.video_patches.resize_frame(frame, 56, 84).shape == (56, 84, 3)


# ----------------------------------------------------------------------------- patchify


def transformers_layout(frames: np.ndarray, ps: int, merge: int, tps: int, mean, std) -> np.ndarray:
    """transformers' patchify, transcribed: normalize, repeat the last frame, view + permute."""
    lut = normalize_lut_fused(mean, std)
    x = np.stack([lut[c][frames[..., c]] for c in range(3)], axis=1)  # T, C, H, W
    pad = -len(x) % tps
    if pad:
        x = np.concatenate([x, np.repeat(x[-1:], pad, axis=0)])
    t, c, h, w = x.shape
    gt, gh, gw = t // tps, h // ps, w // ps
    v = x.reshape(gt, tps, c, gh // merge, merge, ps, gw // merge, merge, ps)
    return v.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8).reshape(gt * gh * gw, c * tps * ps * ps)


PIXEL_CASES = [(1, 28, 28, 14, 2), (4, 28, 56, 14, 2), (5, 64, 32, 16, 2), (7, 56, 84, 14, 3), (2, 32, 32, 8, 1)]


@pytest.mark.parametrize("threads", ["inline", 2])
@pytest.mark.parametrize("t, h, w, ps, tps", PIXEL_CASES)
def test_video_pixel_values_is_transformers_layout(t, h, w, ps, tps, threads):
    frames = np.random.default_rng(t * h + w).integers(0, 256, (t, h, w, 3), dtype=np.uint8)
    mean, std = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
    want = transformers_layout(frames, ps, 2, tps, mean, std)
    par.set_threads(threads)
    try:
        got = mmp.video_patches.pixel_values(frames, h, w, patch_size=ps, merge_size=2, temporal_patch_size=tps,
                                 norm=video_norm(mean, std))
    finally:
        par.set_threads(None)
    assert got.dtype == np.float32 and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("mode", ["portable", "native"])
def test_video_pixel_values_resizes_every_frame_with_aten_u8(mode, monkeypatch):
    if mode == "native" and not native.built():
        pytest.skip("native kernels not built")
    monkeypatch.setattr(par, "_PAR_MIN_PIXELS", 0)  # a window per temporal patch even for this small clip
    frames = np.random.default_rng(9).integers(0, 256, (5, 37, 61, 3), dtype=np.uint8)
    norm = video_norm((0.5,) * 3, (0.5,) * 3)
    native.set_mode(mode)
    par.set_threads(2)
    try:
        resized = np.stack([resize_rgb(f, 56, 28, "aten_u8") for f in frames])
        got = mmp.video_patches.pixel_values(frames, 28, 56, patch_size=14, merge_size=2, temporal_patch_size=2,
                                             norm=norm)
    finally:
        par.set_threads(None)
        native.set_mode(None)
    assert got.tobytes() == transformers_layout(resized, 14, 2, 2, (0.5,) * 3, (0.5,) * 3).tobytes()


def test_video_pixel_values_checks_the_size():
    frames = np.zeros((2, 28, 28, 3), np.uint8)
    with pytest.raises(mmf.InternalError):
        mmp.video_patches.pixel_values(frames, 27, 28, patch_size=14, merge_size=2, temporal_patch_size=2,
                           norm=video_norm((0.5,) * 3, (0.5,) * 3))


# ----------------------------------------------------------------------------- spg


def test_second_per_grid_t():
    assert second_per_grid_t(30, 30, 10.0, 2) == np.float32(0.2)
    assert second_per_grid_t(6, 30, 10.0, 2) == np.float32(1.0)
    assert second_per_grid_t(50, 50, 25.0, 2) == np.float32(0.08)
    assert second_per_grid_t(30, 30, 30000 / 1001, 2) == np.float32(2 / (30000 / 1001))
    assert second_per_grid_t(4, 7, 25.0, 2) == np.float32(0.14)
    assert second_per_grid_t(30, 30, None, 2) == np.float32(2 / 24)  # arrays without metadata
    assert second_per_grid_t(12, 66, 10.0, 2).tobytes() == np.float32(1.1).tobytes()


# ----------------------------------------------------------------------------- prompt


def test_timestamps_and_their_ids():
    times = group_timestamps([0, 6, 12, 17, 23, 29], 10.0, 2)
    assert [f"{t:.1f}" for t in times] == ["0.3", "1.4", "2.6"]
    # An odd count repeats the last index; no rate means 24 fps.
    assert group_timestamps([0, 7, 14, 22, 29], 12.0, 2)[-1] == 29 / 12
    assert group_timestamps([0, 24], None, 2) == [0.5]
    assert QWEN2_TIMESTAMPS.ids(0.3) == [27, 15, 13, 18, 6486, 29]
    assert QWEN2_TIMESTAMPS.ids(12.0) == [27, 16, 17, 13, 15, 6486, 29]
    assert QWEN3_5_TIMESTAMPS.ids(0.3) == [27, 15, 13, 18, 6283, 29]
    # {:.1f} rounds the binary value correctly: ties go to even, near-ties by their bits.
    for value, text in ((0.25, "0.2"), (0.75, "0.8"), (0.05, "0.1"), (1.45, "1.4"), (0.35, "0.3")):
        digits = [15 + int(ch) if ch != "." else 13 for ch in text]
        assert QWEN2_TIMESTAMPS.ids(value) == [27, *digits, 6486, 29], value
    with pytest.raises(mmf.InternalError):
        QWEN2_TIMESTAMPS.ids(float("nan"))


def test_video_expansion():
    assert qwen2_video_tokens((15, 20, 28), 2) == 2100
    ids = qwen3_video_ids((2, 4, 6), [0.3, 1.4], video_token_id=9, vision_start_id=7, vision_end_id=8,
                          vocab=QWEN2_TIMESTAMPS, merge=2)
    assert ids == [27, 15, 13, 18, 6486, 29, 7, *[9] * 6, 8, 27, 16, 13, 19, 6486, 29, 7, *[9] * 6, 8]


# ----------------------------------------------------------------------------- rope


def test_rope_qwen2_text_after_a_long_video_overlaps_its_time_axis():
    # 2 text, a video of t=15 on a 2x2 merged grid, 3 text: text resumes at cur + max(H, W).
    types = [0, 0] + [2] * 60 + [0, 0, 0]
    pos, delta = rope_index(types, video_grids=[(15, 4, 4)], merge=2)
    assert pos[:, :2].tolist() == [[0, 1]] * 3
    assert pos[0, 2:62].reshape(15, 4)[:, 0].tolist() == list(range(2, 17))
    assert pos[:, 62:].tolist() == [[4, 5, 6]] * 3
    assert delta == 17 - 65


def test_rope_qwen2_5_time_axis_is_float32():
    spg = second_per_grid_t(30, 30, 10.0, 2)  # 0.2
    pos, _ = rope_index([2] * 15, video_grids=[(15, 2, 2)], merge=2, tokens_per_second=2, second_per_grid_ts=[spg])
    assert pos[0].tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5]
    spg = second_per_grid_t(12, 66, 10.0, 2)  # f32(1.1): i=5 gives 11 in f32, 10 in f64
    pos, _ = rope_index([2] * 6, video_grids=[(6, 2, 2)], merge=2, tokens_per_second=2, second_per_grid_ts=[spg])
    assert pos[0].tolist() == [0, 2, 4, 6, 8, 11]
    # Without second_per_grid_ts transformers uses the integer 1: steps of tokens_per_second.
    pos, _ = rope_index([2] * 3, video_grids=[(3, 2, 2)], merge=2, tokens_per_second=2)
    assert pos[0].tolist() == [0, 2, 4]
    # Images keep a time step of 1.
    pos, _ = rope_index([1] * 4, image_grids=[(1, 4, 4)], merge=2, tokens_per_second=2, second_per_grid_ts=[])
    assert pos.tolist() == [[0] * 4, [0, 0, 1, 1], [0, 1, 0, 1]]


def test_rope_qwen3_groups_are_separate_grids():
    # Groups of 2x2 merged tokens separated by 8 text tokens (end, 6 timestamp ids, start).
    sep = [0] * 8
    types = [0] + [2] * 4 + sep + [2] * 4 + sep + [2] * 4 + [0]
    pos, delta = rope_index(types, video_grids=[(3, 4, 4)], merge=2, video_groups=True)
    starts = [1, 13, 25]
    assert [int(pos[0, s]) for s in starts] == [1, 11, 21]
    assert pos[:, 5].tolist() == [3, 3, 3] and int(pos[0, -1]) == 23 and delta == 24 - len(types)


def test_rope_layout_errors_and_quirks():
    with pytest.raises(mmf.LayoutError, match="more video runs than video grids"):
        rope_index([2, 0, 2], video_grids=[(1, 2, 2)], merge=2)
    with pytest.raises(mmf.LayoutError, match="gives 1"):
        rope_index([2, 2], video_grids=[(1, 2, 2)], merge=2)
    with pytest.raises(mmf.LayoutError):
        rope_index([], merge=2)
    with pytest.raises(mmf.LayoutError):
        rope_index([3], merge=2)
    with pytest.raises(mmf.LayoutError, match="second_per_grid_ts"):
        rope_index([2], video_grids=[(1, 2, 2)], merge=2, tokens_per_second=2, second_per_grid_ts=[])
    # Two image runs with nothing between are one run, consuming one grid (as transformers).
    pos, _ = rope_index([1, 1], image_grids=[(1, 2, 4), (1, 2, 2)], merge=2)
    assert pos.tolist() == [[0, 0], [0, 0], [0, 1]]
