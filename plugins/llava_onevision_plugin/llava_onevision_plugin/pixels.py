"""The anyres pixel path: one uint8 RGB image to its ``[patches, 3, S, S]`` float32 stack.

transformers resizes the image into the best pinpoint, zero-pads it to the pinpoint,
cuts ``S x S`` crops row by row, puts the original resized straight to ``S x S`` in
front, and rescales + normalizes every patch (docs/families/llava_onevision.md, sections
3 and 4). Here the two resizes are the kernels' exact clones of the backend's (Pillow's,
or ATen's uint8 bicubic for the torchvision backend), and every patch is written once: the
uint8 crop is cast into its slot of the output tensor, then transformed in place by the
:class:`~mm_framework.kernels.ChannelNorm` program that reproduces the backend's
rescale+normalize table bit for bit (or looked up in that table when no program does).
Patches are independent, so bands of them fan out.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from mm_framework.kernels import ChannelNorm, for_chunks, resize_rgb, rows_per_worker

from .anyres import AnyresPlan


def fitted_image(rgb: np.ndarray, plan: AnyresPlan, resample: str, source: Image.Image | None) -> np.ndarray:
    """The image resized to its aspect-preserving size inside the pinpoint (uint8 HWC)."""
    fh, fw = plan.fitted
    if (fh, fw) == rgb.shape[:2]:
        # transformers (Pillow) copies without filtering; the bytes are rgb's.
        return rgb
    return resize_rgb(rgb, fw, fh, resample, source=source)


def canvas(fitted: np.ndarray, plan: AnyresPlan) -> np.ndarray:
    """``fitted`` zero-padded to the pinpoint, centred (uint8 HWC)."""
    if fitted.shape[:2] == plan.best:
        return fitted
    out = np.zeros((*plan.best, 3), dtype=np.uint8)
    top, left = plan.offset
    out[top : top + fitted.shape[0], left : left + fitted.shape[1]] = fitted
    return out


def base_image(rgb: np.ndarray, size: int, resample: str, source: Image.Image | None) -> np.ndarray:
    """The whole original image resized straight to ``size x size`` (uint8 HWC)."""
    if rgb.shape[:2] == (size, size):
        return rgb
    return resize_rgb(rgb, size, size, resample, source=source)


def patch_stack(base: np.ndarray, padded: np.ndarray, plan: AnyresPlan, size: int, norm: ChannelNorm) -> np.ndarray:
    """``[base] + crops`` (row-major over the canvas), normalized, as ``[P, 3, S, S]`` f32."""
    out = np.empty((plan.patches, 3, size, size), dtype=np.float32)
    cols = plan.grid[1]

    def band(start: int, stop: int) -> None:
        for p in range(start, stop):
            if p == 0:
                patch = base
            else:
                y, x = divmod(p - 1, cols)
                patch = padded[y * size : (y + 1) * size, x * size : (x + 1) * size]
            norm.apply_image(patch, out[p])

    for_chunks(band, plan.patches, rows_per_worker(plan.patches, plan.patches * size * size))
    return out
