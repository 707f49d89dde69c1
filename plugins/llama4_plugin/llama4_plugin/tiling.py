"""The canvas and resize size of transformers 5.24's ``Llama4ImageProcessor``, pixel-free.

The reference picks a canvas of ``rows`` x ``cols`` tiles from ``max_patches``
(``find_supported_resolutions``, ``get_best_fit``), resizes the image without distortion to
fit it (``get_max_res_without_distortion``), pads bottom/right and cuts the tiles. Its
arithmetic mixes types, and the size depends on it, so it is copied here:

- every candidate's scale is ``float32(side) / float32(image side)`` (an int64 tensor divided
  by an int), compared and chosen in float32;
- the capped target side is ``min(max(image side, tile), canvas side)``: a Python int unless
  the canvas side is strictly smaller, when it is the canvas's 0-d int64 tensor (Python's
  ``min`` keeps the first of equals), and with ``resize_to_max_canvas`` always the tensor;
- a scale from a tensor side is float32 (``float32(side) / float32(image side)``), from an
  int side float64; comparing a float32 scale with a float64 one rounds the float64 one to
  float32 first; ``floor(image side * scale)`` is float32 when the scale is.
"""

from __future__ import annotations

import functools
import math

import attrs
import numpy as np

_F32 = np.float32


@attrs.frozen
class TileGrid:
    """One image's tiles: a ``rows`` x ``cols`` canvas of tiles, the image resized to
    ``resized`` ``(h, w)`` inside it, and a global thumbnail when there is more than one tile."""

    rows: int
    cols: int
    resized: tuple[int, int]

    @property
    def tiles(self) -> int:
        return self.rows * self.cols

    @property
    def frames(self) -> int:
        """Tiles plus the global thumbnail (only when the canvas has more than one tile)."""
        return self.tiles + 1 if self.tiles > 1 else 1


def _factors(n: int) -> list[int]:
    return sorted({d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)})


@functools.lru_cache(maxsize=16)
def supported_resolutions(max_patches: int, tile: int) -> tuple[tuple[int, int], ...]:
    """``find_supported_resolutions``: every ``(h, w)`` canvas of at most ``max_patches``
    tiles, grouped by aspect ratio in the order the reference's dict first meets them."""
    by_ratio: dict[float, list[tuple[int, int]]] = {}
    for chunks in range(max_patches, 0, -1):
        for f in _factors(chunks):
            by_ratio.setdefault(f / (chunks // f), []).append((f, chunks // f))
    return tuple((h * tile, w * tile) for group in by_ratio.values() for h, w in group)


def best_fit(height: int, width: int, resolutions: tuple[tuple[int, int], ...], to_max: bool) -> tuple[int, int]:
    """``get_best_fit``: the canvas of the smallest upscale >= 1 (the largest with
    ``to_max``), else of the least downscale; among equal scales the least area, first wins."""
    h, w = _F32(height), _F32(width)
    scales = [min(_F32(th) / h, _F32(tw) / w) for th, tw in resolutions]
    up = [s for s in scales if s >= 1]
    if up:
        chosen = max(up) if to_max else min(up)
    else:
        chosen = max(s for s in scales if s < 1)
    fits = [r for r, s in zip(resolutions, scales, strict=True) if s == chosen]
    return min(fits, key=lambda r: r[0] * r[1])


def _scale(side: int, is_f32: bool, image_side: int) -> float:
    return _F32(side) / _F32(image_side) if is_f32 else side / image_side


def _floor(image_side: int, scale: float) -> int:
    return math.floor(_F32(image_side) * scale if isinstance(scale, np.floating) else image_side * scale)


def _less(a: float, b: float) -> bool:
    if isinstance(a, np.floating) or isinstance(b, np.floating):
        return bool(_F32(a) < _F32(b))
    return a < b


def resize_size(height: int, width: int, canvas: tuple[int, int], tile: int, to_max: bool) -> tuple[int, int]:
    """The ``(h, w)`` the image is resized to inside ``canvas`` (each at least 1)."""
    th, tw = canvas
    if to_max:
        targets = ((th, True), (tw, True))
    else:
        cap_h, cap_w = max(height, tile), max(width, tile)
        targets = ((th, True) if th < cap_h else (cap_h, False), (tw, True) if tw < cap_w else (cap_w, False))
    (target_h, f32_h), (target_w, f32_w) = targets
    scale_w, scale_h = _scale(target_w, f32_w, width), _scale(target_h, f32_h, height)
    if _less(scale_w, scale_h):
        new_w, new_h = target_w, min(_floor(height, scale_w), target_h)
    else:
        new_h, new_w = target_h, min(_floor(width, scale_h), target_w)
    return max(new_h, 1), max(new_w, 1)


# Planning, processing and counting each ask for an image's grid; sizes recur across requests.
@functools.lru_cache(maxsize=4096)
def tile_grid(height: int, width: int, tile: int, max_patches: int, to_max: bool) -> TileGrid:
    """The :class:`TileGrid` of a ``width`` x ``height`` image."""
    canvas = best_fit(height, width, supported_resolutions(max_patches, tile), to_max)
    return TileGrid(canvas[0] // tile, canvas[1] // tile, resize_size(height, width, canvas, tile, to_max))
