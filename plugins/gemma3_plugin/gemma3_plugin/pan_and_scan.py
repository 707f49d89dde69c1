"""Pan-and-scan: the crops Gemma 3's processor adds to an image of exaggerated aspect ratio.

The arithmetic is transformers' ``Gemma3ImageProcessorPil.pan_and_scan``
(docs/families/gemma3.md §2): Python float division and ``floor``/``ceil`` on the decoded
size, so the crop count and boxes depend on the width and height alone.
"""

from __future__ import annotations

import math

Box = tuple[int, int, int, int]  # (left, top, right, bottom), right/bottom exclusive


def crop_boxes(width: int, height: int, min_crop_size: int, max_num_crops: int, min_ratio: float) -> list[Box]:
    """The crop boxes of a ``width`` x ``height`` image, row-major; empty when none apply.

    Crops are ``ceil(side / n)`` long along the long side and the full short side; the
    last one is clipped at the image edge, as the reference's array slice is.
    """
    if width >= height:
        if width / height < min_ratio:
            return []
        n = int(math.floor(width / height + 0.5))  # half rounds up
        n = min(int(math.floor(width / min_crop_size)), n)
        cols, rows = min(max_num_crops, max(2, n)), 1
    else:
        if height / width < min_ratio:
            return []
        n = int(math.floor(height / width + 0.5))
        n = min(int(math.floor(height / min_crop_size)), n)
        cols, rows = 1, min(max_num_crops, max(2, n))
    crop_w = int(math.ceil(width / cols))
    crop_h = int(math.ceil(height / rows))
    if min(crop_w, crop_h) < min_crop_size:
        return []
    return [
        (x, y, min(x + crop_w, width), min(y + crop_h, height))
        for y in range(0, crop_h * rows, crop_h)
        for x in range(0, crop_w * cols, crop_w)
    ]
