"""The video cases the golden generator writes and the live parity test recomputes: short
PyAV clips, spec variants covering every video option, and prompts (test support)."""

from __future__ import annotations

from typing import Any

VID = "<|video_pad|>"
# name -> (frames, width, height, fps): 1 fps and under-1-second, upscaled, sliced with the
# small budget below, a clip longer than max_num_frames seconds with the "short" variant.
CLIPS: dict[str, tuple[int, int, int, int]] = {
    "c64x48_30f_12fps": (30, 64, 48, 12),
    "c200x120_9f_3fps": (9, 200, 120, 3),
    "c90x160_5f_1fps": (5, 90, 160, 1),
}
# suffix -> spec changes (the preset's video processor is the class default).
VARIANTS: dict[str, dict[str, Any]] = {
    "": {},
    "_small": {"video_scale_resolution": 112, "video_max_slice_nums": 4},
    "_small_4x_no_id": {"video_scale_resolution": 112, "video_downsample_mode": "4x", "use_image_id": False},
    "_short": {"video_max_num_frames": 2, "video_scale_resolution": 112},
    "_no_slice": {"video_scale_resolution": 112, "video_slice_mode": False},
    "_stack3": {"video_scale_resolution": 112, "video_stack_frames": 3},
    "_stack6_short": {"video_scale_resolution": 112, "video_stack_frames": 6, "video_max_num_frames": 2},
}
PROMPTS = {
    "video": f"User: {VID} What is in this image?",
    "two": f"User: {VID} and {VID} compare them.",
}
