"""The sizes transformers 5.24's Idefics3/SmolVLM image processors resize to, in the same
Python float arithmetic (``int()`` truncation of float quotients), so every size matches.

An image goes through up to three resizes (docs/families/smolvlm.md §2): the longest edge
to ``size_longest_edge`` (even short edge, capped at 4096), then with splitting both sides
up to multiples of ``max_image_size`` (the grid of crops) plus the whole image to a
``max_image_size`` square (the global image); without splitting just that square.
"""

from __future__ import annotations

import math

import attrs

from .spec import MAX_IMAGE_SIZE


@attrs.frozen
class SplitGrid:
    """One image's crop grid: ``rows`` x ``cols`` crops and the global image (0 x 0: the
    global image alone). The item's feature holds ``frames`` images of the tile size."""

    rows: int
    cols: int

    @property
    def frames(self) -> int:
        return self.rows * self.cols + 1 if self.rows else 1


def longest_edge_size(height: int, width: int, longest: int) -> tuple[int, int]:
    """``get_resize_output_image_size``: the longest edge to ``longest`` (an odd short edge
    rounded up to even), then both scaled below ``MAX_IMAGE_SIZE``; each side at least 1."""
    aspect = width / height
    if width >= height:
        width = longest
        height = int(width / aspect)
        if height % 2:
            height += 1
    else:
        height = longest
        width = int(height * aspect)
        if width % 2:
            width += 1
    height, width = max(height, 1), max(width, 1)
    aspect = width / height
    if width >= height and width > MAX_IMAGE_SIZE:
        width = MAX_IMAGE_SIZE
        height = int(width / aspect)
    elif height > width and height > MAX_IMAGE_SIZE:
        height = MAX_IMAGE_SIZE
        width = int(height * aspect)
    return max(height, 1), max(width, 1)


def vision_encoder_size(height: int, width: int, tile: int) -> tuple[int, int]:
    """``resize_for_vision_encoder``: both sides rounded up to multiples of ``tile`` (the
    short one from the long one's rounded value scaled by the aspect ratio)."""
    aspect = width / height
    if width >= height:
        width = math.ceil(width / tile) * tile
        height = math.ceil(int(width / aspect) / tile) * tile
    else:
        height = math.ceil(height / tile) * tile
        width = math.ceil(int(height * aspect) / tile) * tile
    return height, width
