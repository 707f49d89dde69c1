"""The sizes transformers 5.24's MiniCPM-V 4.6 image processors choose, in the same Python
float arithmetic (``math.log``, ``int()`` truncation, banker's ``round``), so every grid and
size matches (docs/families/minicpmv4_6.md §2).

An image becomes a *source* image (the whole picture resized to about ``scale_resolution``
squared pixels, sides multiples of ``patch_size * merge``) and, when its area exceeds that
budget and slicing is on, a ``rows`` x ``cols`` grid of equal slices cut from a second resize
of the original (the *refine* image).
"""

from __future__ import annotations

import math

import attrs


@attrs.frozen
class SliceGrid:
    """One image's plan: the grid (0 x 0: the source image alone), the source image's and
    each slice's size in pixels ``(h, w)``, and the token divisor (16 for ``"16x"``, 4 for
    ``"4x"``). Every size is a multiple of the patch size."""

    rows: int
    cols: int
    source: tuple[int, int]
    slice: tuple[int, int]
    patch: int
    divisor: int

    @property
    def frames(self) -> int:
        """The source image plus the slices."""
        return 1 + self.rows * self.cols

    @property
    def source_tokens(self) -> int:
        return (self.source[0] // self.patch) * (self.source[1] // self.patch) // self.divisor

    @property
    def slice_tokens(self) -> int:
        return (self.slice[0] // self.patch) * (self.slice[1] // self.patch) // self.divisor if self.rows else 0

    @property
    def columns(self) -> int:
        """The item's width in ``pixel_values``' last axis: every frame's ``h * w / patch``."""
        h, w = self.source
        sh, sw = self.slice
        return (h * w + self.rows * self.cols * sh * sw) // self.patch

    def target_sizes(self) -> list[tuple[int, int]]:
        """The processor's ``target_sizes`` rows of this item: patches per side of each frame."""
        p = self.patch
        rows = [(self.source[0] // p, self.source[1] // p)]
        return rows + [(self.slice[0] // p, self.slice[1] // p)] * (self.rows * self.cols)


def merge_factor(downsample_mode: str) -> int:
    """``"4x"`` merges one 2x2 block, ``"16x"`` two (so sides are multiples of 2 or 4 patches)."""
    return 2 if downsample_mode == "4x" else 4


def token_divisor(downsample_mode: str) -> int:
    return 4 if downsample_mode == "4x" else 16


def ensure_divide(length: float, divisor: int) -> int:
    return max(round(length / divisor) * divisor, divisor)


def best_resize(height: float, width: float, scale_resolution: int, unit: int, allow_upscale: bool) -> tuple[int, int]:
    """``find_best_resize``: an image above the ``scale_resolution`` squared budget (or any,
    with ``allow_upscale``) scaled to that area at its aspect ratio, then each side rounded
    to a multiple of ``unit`` (patch size times the merge factor), at least one unit."""
    if height * width > scale_resolution * scale_resolution or allow_upscale:
        aspect = width / height
        height = int(scale_resolution / math.sqrt(aspect))
        width = int(height * aspect)
    return ensure_divide(height, unit), ensure_divide(width, unit)


def sliced_grid(height: int, width: int, max_slice_nums: int, scale_resolution: int) -> tuple[int, int] | None:
    """``get_sliced_grid``: ``None`` for an image within one budget, else the ``(rows, cols)``
    with ``multiple - 1``, ``multiple`` or ``multiple + 1`` slices (``multiple`` = the area in
    budgets, rounded up, capped at ``max_slice_nums``) whose log aspect ratio is closest to the
    image's; ties go to more rows."""
    log_ratio = math.log(width / height)
    multiple = min(math.ceil(width * height / (scale_resolution * scale_resolution)), max_slice_nums)
    if multiple <= 1:
        return None
    best, best_error = (1, 1), float("inf")
    for num in (multiple - 1, multiple, multiple + 1):
        if num == 1 or num > max_slice_nums:
            continue
        for rows in range(1, num + 1):
            if num % rows:
                continue
            error = abs(log_ratio - math.log((num // rows) / rows))
            if error < best_error or (error == best_error and rows > best[0]):
                best, best_error = (rows, num // rows), error
    return best


def plan(height: int, width: int, *, slice_mode: bool, max_slice_nums: int, scale_resolution: int, patch: int,
         downsample_mode: str) -> SliceGrid:
    """The :class:`SliceGrid` of a ``width`` x ``height`` image (``_preprocess``'s sizes)."""
    unit = patch * merge_factor(downsample_mode)
    grid = sliced_grid(height, width, max_slice_nums, scale_resolution) if slice_mode else None
    source = best_resize(height, width, scale_resolution, unit, allow_upscale=grid is None)
    if grid is None:
        return SliceGrid(0, 0, source, (0, 0), patch, token_divisor(downsample_mode))
    rows, cols = grid
    # get_refine_size: the image first rounded to a multiple of the grid, each cell then sized
    # like a source image (always scaled to the budget).
    cell = best_resize(ensure_divide(height, rows) / rows, ensure_divide(width, cols) / cols, scale_resolution, unit,
                       allow_upscale=True)
    return SliceGrid(rows, cols, source, cell, patch, token_divisor(downsample_mode))
