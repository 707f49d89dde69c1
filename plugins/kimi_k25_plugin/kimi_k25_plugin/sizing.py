"""Kimi K2.5's NaViT sizing (``navit_resize`` of transformers 5.24's image processor): pure,
pixel-free, so token counts come from an image's size alone."""

from __future__ import annotations

import math


def navit_resize(height: int, width: int, patch_size: int, merge_size: int, max_patches: int,
                 max_size_per_side: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((resized_h, resized_w), (padded_h, padded_w))`` of a ``height`` x ``width`` image.

    The scale is the most restrictive of the patch budget (``sqrt(max_patches / patches)``,
    patches counted with floor division and at least one per side), the per-side cap
    (``max_size_per_side * patch_size`` pixels) and 1 (never upscale); sides truncate with
    ``int`` and are at least 1; the canvas pads each side up to a multiple of
    ``merge_size * patch_size``. Written with the reference's very Python float operations
    (``max(1.0, h // p)`` keeps an int above one), so every size rounds the same way."""
    num_patches_h = max(1.0, height // patch_size)
    num_patches_w = max(1.0, width // patch_size)
    scale_for_total_patches = math.sqrt(max_patches / (num_patches_h * num_patches_w))
    side = max_size_per_side * patch_size
    scale = min(1.0, scale_for_total_patches, side / height, side / width)
    new_height = min(max(1, int(height * scale)), side)
    new_width = min(max(1, int(width * scale)), side)
    factor = merge_size * patch_size
    pad_height = (factor - new_height % factor) % factor + new_height
    pad_width = (factor - new_width % factor) % factor + new_width
    return (new_height, new_width), (pad_height, pad_width)
