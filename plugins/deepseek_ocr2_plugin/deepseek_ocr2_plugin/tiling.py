"""Pixel-free sizing of DeepSeek-OCR-2's two views, in transformers 5.24's own Python float
arithmetic so every size and grid matches (docs/families/deepseek_ocr2.md §2).

The local crops: ``get_optimal_tiled_canvas`` picks a ``cols`` x ``rows`` grid of tiles
whose aspect ratio is closest to the image's among all grids of ``min_patches`` to
``max_patches`` tiles (ties go to the later grid in tile-count order while the image
covers more than half of its area). The global view: the longest edge scaled to the
target side with Python's ``round`` (half to even), then padded to a square.
"""

from __future__ import annotations

import functools

import attrs

from mm_framework import plugin as mmp


@attrs.frozen
class LocalCrops:
    """One image's local crops: a ``cols`` x ``rows`` grid of tiles, row-major (0 x 0: the
    global view alone, as for an image no larger than one tile or with cropping off)."""

    cols: int
    rows: int

    @property
    def count(self) -> int:
        """``num_local_patches``."""
        return self.cols * self.rows


@functools.lru_cache(maxsize=16)
def _arrangements(min_tiles: int, max_tiles: int) -> tuple[tuple[int, int], ...]:
    """``get_all_supported_aspect_ratios``: every (cols, rows) with ``min..max`` tiles, in
    (width-major) enumeration order, stably sorted by tile count."""
    grids = [(w, h) for w in range(1, max_tiles + 1) for h in range(1, max_tiles + 1)
             if min_tiles <= w * h <= max_tiles]
    return tuple(sorted(grids, key=lambda g: g[0] * g[1]))


@functools.lru_cache(maxsize=256)
def optimal_canvas(width: int, height: int, tile: int, min_tiles: int, max_tiles: int) -> tuple[int, int]:
    """``get_optimal_tiled_canvas``: the (cols, rows) of a ``width`` x ``height`` image."""
    aspect = width / height
    area = width * height
    best_diff, best = float("inf"), (1, 1)
    for grid in _arrangements(min_tiles, max_tiles):
        diff = abs(aspect - grid[0] / grid[1])
        if diff < best_diff:
            best_diff, best = diff, grid
        elif diff == best_diff and area > 0.5 * tile * tile * grid[0] * grid[1]:
            best = grid
    return best


def global_size(width: int, height: int, side: int) -> tuple[int, int]:
    """``(w, h)`` of the global view before padding: the longest edge scaled to ``side``.

    A strip whose short edge rounds to 0 is refused (transformers' resize raises a
    ``ValueError`` on the empty size)."""
    scale = side / max(width, height)
    w, h = round(width * scale), round(height * scale)
    if w < 1 or h < 1:
        raise mmp.MediaError(f"deepseek_ocr2: the {width}x{height} image's global view rounds to an empty "
                             f"{w}x{h} at side {side}")
    return w, h
