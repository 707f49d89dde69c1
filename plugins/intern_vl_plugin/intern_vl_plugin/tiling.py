"""Aspect-ratio tile selection: how many ``image_size`` tiles an image is cut into.

Depends only on the decoded width and height, never on pixels, so the token count of an
image is known before it is processed (``mm_num_media_tokens``).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class TileGrid:
    """``cols`` x ``rows`` tiles, plus a thumbnail when ``thumbnail``."""

    cols: int
    rows: int
    thumbnail: bool

    @property
    def blocks(self) -> int:
        return self.cols * self.rows

    @property
    def tiles(self) -> int:
        """What ``Tiles(n)`` carries: the grid tiles plus the thumbnail, if any."""
        return self.blocks + int(self.thumbnail)


def candidate_grids(max_num: int) -> tuple[tuple[int, int], ...]:
    """Every ``(cols, rows)`` with ``cols * rows <= max_num``, by ascending tile count.

    SGLang sorts a ``set`` by ``cols * rows`` only, so its order within one count is the
    set's. That order never decides anything: the selection keeps the first of two
    equally close grids unless the later one has more tiles, so order matters only if two
    same-count grids ``(i, j)`` and ``(k, l)`` (``i < k``, ``l < j``) were both closest.
    They cannot be: ``(i, l)`` has fewer tiles and the ratio ``i/l`` strictly between
    theirs, so it is strictly closer to any aspect equidistant from both.
    ``tests/test_intern_vl_tiling.py`` also checks the two orders agree exhaustively.
    """
    grids = [(i, j) for i in range(1, max_num + 1) for j in range(1, max_num // i + 1)]
    return tuple(sorted(grids, key=lambda g: (g[0] * g[1], g[0])))


def select_grid(width: int, height: int, candidates: tuple[tuple[int, int], ...], use_thumbnail: bool) -> TileGrid:
    """The grid whose ``cols / rows`` is closest to ``width / height``.

    Follows SGLang's ``InternVLImageProcessor.dynamic_preprocess``
    (docs/families/intern_vl.md): the first strictly smaller ``|aspect - cols/rows|`` wins;
    on an exact tie the larger tile count wins. Upstream InternVL's
    ``find_closest_aspect_ratio`` differs on
    ties: it takes the later grid only when ``width * height > 0.5 * image_size**2 *
    cols * rows``, so small images stay on fewer tiles there (a 32x32 image with 16-pixel
    tiles: upstream 2x2, here 3x3). The arithmetic is Python float64, as in SGLang, so
    exact ties are decided identically.
    """
    aspect = width / height
    best_diff = float("inf")
    best = (1, 1)
    for cols, rows in candidates:
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best_diff = diff
            best = (cols, rows)
        elif diff == best_diff and cols * rows > best[0] * best[1]:
            best = (cols, rows)
    cols, rows = best
    return TileGrid(cols, rows, use_thumbnail and cols * rows > 1)


def select_grid_transformers(
    width: int, height: int, candidates: tuple[tuple[int, int], ...], image_size: int
) -> TileGrid:
    """transformers' ``get_optimal_tiled_canvas`` (``GotOcr2ImageProcessor``, which
    ``InternVLProcessor`` runs with ``crop_to_patches=True``): the first strictly smaller
    ``|aspect - cols/rows|`` wins; on an exact tie the later grid wins only when
    ``width * height > 0.5 * image_size**2 * cols * rows`` (upstream InternVL's rule). Its
    candidates are ``candidate_grids``' order (width-major, stably sorted by tile count).
    The thumbnail is always added when there is more than one tile."""
    aspect = width / height
    area = width * height
    best_diff = float("inf")
    best = (1, 1)
    for cols, rows in candidates:
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best_diff = diff
            best = (cols, rows)
        elif diff == best_diff and area > 0.5 * image_size * image_size * cols * rows:
            best = (cols, rows)
    cols, rows = best
    return TileGrid(cols, rows, cols * rows > 1)
