"""Gemma 4's aspect-ratio preserving size (pure, pixel-free).

``target_size`` is transformers 5.24's ``get_aspect_ratio_preserving_size`` step for step
(the same double-precision ``math.sqrt`` and ``floor``, so the same integers): the largest
size whose sides are multiples of ``pooling_kernel_size * patch_size`` and that holds at
most ``max_patches`` patches, with the reference's fallback for extreme aspect ratios
(the short side one block, the long side ``floor(long / short)`` blocks, capped at
``max_soft_tokens`` blocks).

The reference's two errors cannot fire for a valid spec, so none is raised here: both
sides under one block would mean ``max_patches < pooling_kernel_size**2`` (the spec's
``max_soft_tokens`` is at least 70); a side that falls under one block is the short one,
so ``floor(long / short) >= 1``; and each rounded side is at most its ideal, so the area
stays within the budget (the fallback's is one block by at most ``max_soft_tokens``
blocks, exactly the budget).
"""

from __future__ import annotations

import math


def target_size(height: int, width: int, patch_size: int, max_patches: int, pooling_kernel_size: int
                ) -> tuple[int, int]:
    """``(target_height, target_width)`` of a ``width`` x ``height`` image."""
    factor = math.sqrt(max_patches * patch_size**2 / (height * width))
    side = pooling_kernel_size * patch_size
    th = int(math.floor(factor * height / side)) * side
    tw = int(math.floor(factor * width / side)) * side
    max_side = (max_patches // pooling_kernel_size**2) * side
    if th == 0:
        return side, min(int(math.floor(width / height)) * side, max_side)
    if tw == 0:
        return min(int(math.floor(height / width)) * side, max_side), side
    return th, tw
