"""Video frames as temporal patches: the pixel path every Qwen2-VL-style video processor shares.

transformers 5.24's Qwen2-VL, Qwen3-VL and GLM-4V video processors exist only on the
torchvision backend: frames are resized with ATen's uint8 antialiased bicubic
(``aten_u8``), rescaled and normalized with the fused torchvision arithmetic, the last
frame repeated to fill a short last temporal patch, and laid out merge window by merge
window (``patchify``'s ``permute(0, 1, 4, 7, 5, 8, 3, 2, 6, 9)``). Families differ only in
the frame size they choose (their ``smart_resize``), which they pass in.
"""

from __future__ import annotations

import numpy as np

from .errors import InternalError
from .kernels import Bf16Norm, ChannelNorm, for_chunks, patch_dtype, patchify_merged_blocks, resize_rgb, rows_per_worker

RESAMPLE = "aten_u8"


def grid(
    num_frames: int, height: int, width: int, *, patch_size: int, temporal_patch_size: int
) -> tuple[int, int, int]:
    """``video_grid_thw`` of ``num_frames`` resized frames: the frame count is padded up to a
    multiple of ``temporal_patch_size`` by repeating the last frame."""
    if num_frames <= 0 or height % patch_size or width % patch_size:
        raise InternalError(f"video grid: {num_frames} frames of {width}x{height} for patch {patch_size}")
    return -(-num_frames // temporal_patch_size), height // patch_size, width // patch_size


def resize_frame(frame: np.ndarray, height: int, width: int) -> np.ndarray:
    """One ``[H, W, 3]`` frame at ``height`` x ``width`` with ``aten_u8`` (the frame itself
    when the size already matches, as torchvision returns its input then)."""
    return frame if frame.shape[:2] == (height, width) else resize_rgb(frame, width, height, RESAMPLE)


def pixel_values(
    frames: np.ndarray, height: int, width: int, *, patch_size: int, merge_size: int, temporal_patch_size: int,
    norm: ChannelNorm | Bf16Norm | None,
) -> np.ndarray:
    """``pixel_values_videos`` of one clip: f32 ``[gt*gh*gw, 3*tps*ps*ps]``, or the u8 pixels
    in that layout when ``norm`` is ``None`` (bf16 bits with a :class:`Bf16Norm`).

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
    gt, gh, gw = grid(t, height, width, patch_size=patch_size, temporal_patch_size=tps)
    n = gh * gw
    out = np.empty((gt * n, 3 * tps * patch_size * patch_size), dtype=patch_dtype(norm))
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
