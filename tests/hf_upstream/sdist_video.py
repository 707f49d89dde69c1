"""Our testers for transformers' ``VideoProcessingTestMixin`` (from the 5.24.0 sdist), one per
video processor ``mm_framework.hf`` serves (torchvision only: transformers has no PIL video
processors): the processor's published defaults, small clips (8 frames of 40 to 120 pixels a
side), and the shape of ``pixel_values_videos`` from each family's documented sizing
(docs/families/qwen_vl_video.md section 4, docs/families/glm4v.md section 7).

These processors concatenate the patches of every video in one ``(patches, dim)`` tensor, the
layout the mixin's ``assert_expected_videos_shape`` hook exists for: ``expected_output_video_shape``
gives the whole batch's shape and :func:`assert_expected_videos_shape` compares it as a whole.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from .sdist_families import CLIP_MEAN, CLIP_STD

_FLAT = "asserts per-video rows (`shape[1]` is the frame count; the 4-channel check sets `shape[1] = 3`); these " \
        "processors return every video's patches in one `(patches, dim)` tensor: fails on transformers' own classes"
# The tests the mixin runs that do not apply to these testers (each checked with MM_UPSTREAM_ADAPTER=0).
NOT_APPLICABLE: dict[str, str] = {
    "test_can_compile_fast_video_processor": "@slow, needs an accelerator",
    "test_valid_kwargs_set": "checks the class's own wiring, finding the expected Kwargs class from "
                             "`processor.__class__`, which through the adapter is AcceleratedVideoProcessor",
    "test_video_processor_from_dict_with_kwargs": "expects `size {shortest_edge: 20}` and a `crop_size` from the "
                                                  "tester's dict (a CLIP-style processor's); these take pixel bounds "
                                                  "and no crop: fails on transformers' own classes",
    "test_call_sample_frames": _FLAT,
    "test_call_numpy_4_channels": _FLAT,
}


def _clip_hw(video: Any) -> tuple[int, int]:
    """(height, width) of a mixin clip: PIL frames, an NHWC array, a NCHW tensor or a list of HWC arrays."""
    frame = video[0]
    if hasattr(frame, "size") and not hasattr(frame, "shape"):
        return frame.size[1], frame.size[0]
    if hasattr(video, "permute"):
        return int(video.shape[2]), int(video.shape[3])
    return int(frame.shape[0]), int(frame.shape[1])


def smart_resize(n: int, h: int, w: int, factor: int, lo: int, hi: int, temporal: int | None) -> tuple[int, int]:
    """The frame size: Qwen2-VL's image ``smart_resize`` (``temporal`` None: the bounds per frame), or
    Qwen3-VL's / GLM-4V's, where the bounds hold ``round(n / temporal) * temporal`` frames (sides of
    at least ``factor``, as the testers' clips have)."""
    t = 1 if temporal is None else round(n / temporal) * temporal
    frames = 1 if temporal is None else n
    h_bar, w_bar = round(h / factor) * factor, round(w / factor) * factor
    if t * h_bar * w_bar > hi:
        beta = math.sqrt(frames * h * w / hi)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
    elif t * h_bar * w_bar < lo:
        beta = math.sqrt(lo / (frames * h * w))
        h_bar, w_bar = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return h_bar, w_bar


class VideoTester:
    """Our tester: the mixin has no tester base for videos."""

    model_type = ""
    params: dict[str, Any] = {}
    # The bounds hold t frames (Qwen3-VL, GLM-4V) or one (Qwen2-VL: None).
    temporal_bounds = True

    def __init__(self, parent: Any, batch_size: int = 5, num_frames: int = 8, num_channels: int = 3,
                 min_resolution: int = 40, max_resolution: int = 120) -> None:
        self.parent = parent
        self.batch_size, self.num_frames, self.num_channels = batch_size, num_frames, num_channels
        self.min_resolution, self.max_resolution = min_resolution, max_resolution
        self.__dict__.update(copy.deepcopy(self.params))

    def prepare_video_processor_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.params)

    def prepare_video_inputs(self, equal_resolution: bool = False, return_tensors: str = "pil") -> list[Any]:
        return self.parent.common.prepare_video_inputs(
            batch_size=self.batch_size, num_frames=self.num_frames, num_channels=self.num_channels,
            min_resolution=self.min_resolution, max_resolution=self.max_resolution,
            equal_resolution=equal_resolution, return_tensors=return_tensors)

    def expected_output_video_shape(self, videos: list[Any]) -> tuple[int, int]:
        p, tps, factor = self.patch_size, self.temporal_patch_size, self.patch_size * self.merge_size
        rows = 0
        for video in videos:
            n = len(video)
            h, w = smart_resize(n, *_clip_hw(video), factor, self.size["shortest_edge"], self.size["longest_edge"],
                                tps if self.temporal_bounds else None)
            rows += math.ceil(n / tps) * (h // p) * (w // p)
        return rows, self.num_channels * tps * p * p


class Qwen2VLVideoTester(VideoTester):
    """Qwen2-VL / Qwen2.5-VL (the class's video bounds)."""

    model_type = "qwen2_vl"
    params = {"size": {"shortest_edge": 128 * 28 * 28, "longest_edge": 768 * 28 * 28}, "patch_size": 14,
              "temporal_patch_size": 2, "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
              "do_sample_frames": False}
    temporal_bounds = False


class Qwen3VLVideoTester(VideoTester):
    """Qwen3-VL / Qwen3.5 (the class's bounds; the hub's 4096..25165824 give the same steps)."""

    model_type = "qwen3_vl"
    params = {"size": {"shortest_edge": 128 * 32 * 32, "longest_edge": 768 * 32 * 32}, "patch_size": 16,
              "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
              "do_sample_frames": False}


class Glm4vVideoTester(VideoTester):
    """GLM-4.1V (the class's bounds, docs/families/glm4v.md: video_min/max_pixels)."""

    model_type = "glm4v"
    params = {"size": {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 2 * 30000}, "patch_size": 14,
              "temporal_patch_size": 2, "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
              "do_sample_frames": False}


class Glm46vVideoTester(Glm4vVideoTester):
    """GLM-4.6V: its own class, the GLM-4.1V values."""

    model_type = "glm46v"


def video_class(model_type: str) -> type:
    """transformers' video processor class for ``model_type``."""
    import transformers
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    names = VIDEO_PROCESSOR_MAPPING_NAMES[model_type]
    return getattr(transformers, names["torchvision"] if isinstance(names, dict) else names)


def assert_expected_videos_shape(test: Any, encoded_videos: Any, expected_output_video_shape: Any,
                                 num_videos: int) -> None:
    """The mixin's hook for processors concatenating every video's frames along one axis."""
    test.assertEqual(tuple(encoded_videos.shape), tuple(expected_output_video_shape))


TESTERS = (Qwen2VLVideoTester, Qwen3VLVideoTester, Glm4vVideoTester, Glm46vVideoTester)
