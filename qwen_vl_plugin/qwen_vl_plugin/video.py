"""Qwen-VL video pixels: frame size budgets, resize, normalize, temporal patches.

Exact to transformers 5.24's ``Qwen2VLVideoProcessor`` (Qwen2-VL, Qwen2.5-VL) and
``Qwen3VLVideoProcessor`` (Qwen3-VL, Qwen3.5); the facts are in
docs/families/qwen_vl_video.md. Those processors exist only for transformers' torchvision
backend, so whatever backend a pipeline uses for images, video frames are resized with
ATen's uint8 antialiased bicubic (``aten_u8``) and normalized with the fused torchvision
arithmetic (``channel_norm_fused``) (§4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from mm_framework.plugin import MediaError, SpecError
from mm_framework.kernels import ChannelNorm, channel_norm_fused, smart_resize

from .video_sampling import DEFAULT_FPS


def video_norm(mean: Sequence[float], std: Sequence[float]) -> ChannelNorm:
    """The video processors' rescale + normalize (torchvision's fused form, §4)."""
    return channel_norm_fused(mean, std)


def qwen2_frame_size(height: int, width: int, *, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2/2.5 target ``(h, w)``: the image ``smart_resize`` applied per frame (§4)."""
    return smart_resize(height, width, factor, min_pixels, max_pixels)


def qwen3_frame_size(
    num_frames: int,
    height: int,
    width: int,
    *,
    factor: int,
    temporal_factor: int,
    min_pixels: int,
    max_pixels: int,
) -> tuple[int, int]:
    """Qwen3-VL/3.5 target ``(h, w)``: a pixel budget over all ``num_frames`` frames (§4).

    Frames smaller than ``factor`` on a side are first scaled up (``int(side * s)``);
    then ``round(t / tf) * tf * h_bar * w_bar`` is held to ``[min_pixels, max_pixels]``,
    with ``beta`` from the unrounded ``num_frames * h * w``. Fewer than
    ``temporal_factor`` frames is refused, as transformers does.
    """
    if factor <= 0 or temporal_factor <= 0 or max_pixels <= 0 or min_pixels < 0:
        raise SpecError(
            f"qwen3 video size: bad factor={factor} temporal_factor={temporal_factor} "
            f"min_pixels={min_pixels} max_pixels={max_pixels}"
        )
    if num_frames < temporal_factor:
        raise MediaError(f"video: t:{num_frames} must be larger than temporal_factor:{temporal_factor}")
    if height <= 0 or width <= 0:
        raise MediaError(f"video: empty frames ({height}x{width})")
    if height < factor or width < factor:
        scale = max(factor / height, factor / width)
        height, width = int(height * scale), int(width * scale)
    ratio = max(height, width) / min(height, width)
    if ratio > 200:
        raise MediaError(f"video: absolute aspect ratio must be smaller than 200, got {ratio}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    t_bar = round(num_frames / temporal_factor) * temporal_factor
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((num_frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (num_frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def second_per_grid_t(
    num_indices: int | None, total_frames: int | None, fps: float | None, temporal_patch_size: int
) -> np.float32:
    """Qwen2.5-VL's ``second_per_grid_ts`` entry for one clip, as the float32 it becomes (§6).

    ``temporal_patch_size / sampled_fps`` with ``sampled_fps = num_indices / total_frames
    * fps``, or ``fps or 24`` when any of the three is unknown.
    """
    if num_indices is None or total_frames is None or fps is None:
        sampled = fps or DEFAULT_FPS
    else:
        sampled = num_indices / total_frames * fps
    return np.float32(temporal_patch_size / sampled)
