"""GLM-4V's ``smart_resize``, shared by still images and video frames."""

from __future__ import annotations

import math

from mm_framework import plugin as mmp


def target_hw(height: int, width: int, factor: int, min_pixels: int, max_pixels: int,
              temporal: int, frames: int | None = None) -> tuple[int, int]:
    """GLM-4V's ``smart_resize`` of a still image, which the processor calls with
    ``num_frames = temporal_factor = temporal_patch_size``: a side shorter than ``factor``
    is first raised to it, the other scaled by the same ratio and both truncated; the pixel
    bounds count the image ``temporal`` times. Same float operations as transformers, so
    the same sizes (``kernels.smart_resize`` is Qwen2-VL's, which has neither step). For a
    video, ``temporal`` is the rounded frame count ``t_bar`` and ``frames`` the count itself,
    which ``beta`` uses."""
    h, w = height, width
    if h < factor or w < factor:
        scale = max(factor / h, factor / w)
        h, w = int(h * scale), int(w * scale)
    if max(h, w) / min(h, w) > 200:
        raised = f" is {w}x{h} once its short side is raised to {factor}" if (h, w) != (height, width) else ""
        raise mmp.MediaError(f"glm4v: the {width}x{height} image{raised}; "
                             f"absolute aspect ratio must be smaller than 200, got {max(h, w) / min(h, w)}")
    h_bar = round(h / factor) * factor
    w_bar = round(w / factor) * factor
    if temporal * h_bar * w_bar > max_pixels:
        beta = math.sqrt(((temporal if frames is None else frames) * h * w) / max_pixels)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
    elif temporal * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / ((temporal if frames is None else frames) * h * w))
        h_bar = math.ceil(h * beta / factor) * factor
        w_bar = math.ceil(w * beta / factor) * factor
    return h_bar, w_bar
