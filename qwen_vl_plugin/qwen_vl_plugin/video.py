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

from mm_framework.plugin import InternalError, MediaError, SpecError
from mm_framework.kernels import (
    ChannelNorm, channel_norm_fused, for_chunks, patchify_merged_blocks, resize_rgb, rows_per_worker, smart_resize,
)

from .video_sampling import DEFAULT_FPS

VIDEO_RESAMPLE = "aten_u8"


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


def video_grid(
    num_frames: int, height: int, width: int, *, patch_size: int, temporal_patch_size: int
) -> tuple[int, int, int]:
    """``video_grid_thw`` of ``num_frames`` resized frames: the frame count is padded up to a
    multiple of ``temporal_patch_size`` by repeating the last frame (§4)."""
    if num_frames <= 0 or height % patch_size or width % patch_size:
        raise InternalError(f"video grid: {num_frames} frames of {width}x{height} for patch {patch_size}")
    return -(-num_frames // temporal_patch_size), height // patch_size, width // patch_size


def resize_frame(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    """One ``[H, W, 3]`` frame at ``height`` x ``width`` with ``aten_u8`` (the frame itself
    when the size already matches, as torchvision returns its input then)."""
    return frame if frame.shape[:2] == (height, width) else resize_rgb(frame, width, height, VIDEO_RESAMPLE)


def video_pixel_values(
    frames: np.ndarray, height: int, width: int, *, patch_size: int, merge_size: int, temporal_patch_size: int,
    norm: ChannelNorm | None,
) -> np.ndarray:
    """``pixel_values_videos`` of one clip: f32 ``[gt*gh*gw, 3*tps*ps*ps]`` (§4), or the
    u8 pixels in that layout when ``norm`` is ``None``.

    ``frames`` (``[T, H, W, 3]`` uint8) are resized to ``height`` x ``width`` and laid
    out one temporal patch of ``tps`` frames at a time (rows ``(t, merge windows,
    patches in a window)``, columns ``(c, frame within the patch, py, px)``), the last
    frame repeated to fill a short last patch. transformers repeats it after normalizing;
    normalization is per byte, so repeating the resized frame gives the same values.
    Temporal patches fan out over the ``par`` seam, each resizing its own frames into
    its own scratch and writing only its own rows, so any thread count gives the same
    bytes.
    """
    t, tps = len(frames), temporal_patch_size
    gt, gh, gw = video_grid(t, height, width, patch_size=patch_size, temporal_patch_size=tps)
    n = gh * gw
    out = np.empty((gt * n, 3 * tps * patch_size * patch_size), dtype=np.uint8 if norm is None else np.float32)
    resized = frames.shape[1:3] == (height, width)

    def groups(lo: int, hi: int) -> None:
        stack = np.empty((tps, height, width, 3), dtype=np.uint8)
        for g in range(lo, hi):
            members = [min(g * tps + j, t - 1) for j in range(tps)]
            if resized and members[-1] == g * tps + tps - 1:
                patch = frames[g * tps : (g + 1) * tps]  # already the right size: no copy
            else:
                for j, k in enumerate(members):
                    stack[j] = stack[j - 1] if j and k == members[j - 1] else resize_frame(frames[k], height, width)
                patch = stack
            patchify_merged_blocks(patch, patch_size, merge_size, tps, norm, out=out[g * n : (g + 1) * n])

    for_chunks(groups, gt, rows_per_worker(gt, t * height * width))
    return out


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
