"""One picture's frames and their patch layout, shared by images and video frames.

A picture (an image, or one sampled video frame) becomes its source image and, when its
:class:`~.slicing.SliceGrid` has a grid, the slices cut row-major from the refine image
(docs/families/minicpmv4_6.md §2). Each frame is rescaled and normalized straight into the
``reshape_by_patch`` layout; a picture's feature is its frames side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mm_framework import kernels

from .slicing import SliceGrid


def resized_frames(rgb: np.ndarray, g: SliceGrid, resizer: str, source: Any = None) -> list[np.ndarray]:
    """The uint8 frames of HWC ``rgb`` (``source``: its Pillow image, if lent): the source
    image, then the slices row-major (views into the refine image)."""
    frames = [_resized(rgb, g.source, resizer, source)]
    if g.rows:
        sh, sw = g.slice
        refine = _resized(rgb, (sh * g.rows, sw * g.cols), resizer, source)
        frames += [refine[r * sh:(r + 1) * sh, c * sw:(c + 1) * sw] for r in range(g.rows) for c in range(g.cols)]
    return frames


def _resized(rgb: np.ndarray, hw: tuple[int, int], resizer: str, source: Any) -> np.ndarray:
    if rgb.shape[:2] == hw:
        return rgb
    return kernels.resize_rgb(rgb, hw[1], hw[0], resizer, source=source)


def write_feature(frames: list[np.ndarray], patch: int, norm: Any, out: np.ndarray) -> None:
    """``frames`` normalized by ``norm`` into ``out`` float32 ``[3, patch, columns]``, one
    after another along the last axis."""
    start = 0
    for frame in frames:
        h, w = frame.shape[:2]
        n = h * w // patch
        _patches(frame, patch, norm, out[:, :, start:start + n])
        start += n


def _patches(frame: np.ndarray, p: int, norm: Any, out: np.ndarray) -> None:
    """HWC uint8 ``frame`` rescaled and normalized straight into ``out`` [3, p, h*w/p] in
    ``reshape_by_patch``'s order: row ``py`` of ``out`` holds row ``py`` of every patch, patches
    row-major, so it reads image rows ``py, py + p, ...`` whole (no CHW intermediate)."""
    h, w = frame.shape[:2]
    src = frame.reshape(h // p, p, w, 3)
    dst = out.reshape(3, p, h // p, w)

    def run(a: int, b: int) -> None:
        for c in range(3):
            norm.apply(c, src[:, a:b, :, c].transpose(1, 0, 2), dst[c, a:b])

    kernels.for_chunks(run, p, kernels.rows_per_worker(p, h * w))
