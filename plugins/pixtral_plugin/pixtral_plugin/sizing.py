"""Pixtral's resized size and token grid (docs/families/pixtral.md §1, §6).

Pure integer/float arithmetic, no pixels: ``mm_plan_item`` sizes every item with it, and
``mm_process_item`` and the pixel-free ``mm_num_media_tokens`` both take the plan, so the
three cannot disagree.
"""

from __future__ import annotations

import math

from mm_framework import plugin as mmp


def resized_size(height: int, width: int, longest_edge: int, factor: int) -> tuple[int, int]:
    """``(H, W)`` transformers resizes a ``height`` x ``width`` image to.

    Scale down (floor, in double precision, exactly as transformers) so the longer side
    fits ``longest_edge``, then round each side *up* to a multiple of ``factor``
    (patch size times spatial merge). A side that floors to 0 makes transformers fail;
    it is a ``MediaError`` here.
    """
    if height <= 0 or width <= 0:
        raise mmp.MediaError(f"pixtral: image size must be positive, got {width}x{height}")
    ratio = max(height / longest_edge, width / longest_edge)
    h, w = height, width
    if ratio > 1:
        h = int(math.floor(height / ratio))
        w = int(math.floor(width / ratio))
    if h == 0 or w == 0:
        raise mmp.MediaError(
            f"pixtral: a {width}x{height} image degenerates to {w}x{h} at longest_edge={longest_edge}"
        )
    return -(-h // factor) * factor, -(-w // factor) * factor
