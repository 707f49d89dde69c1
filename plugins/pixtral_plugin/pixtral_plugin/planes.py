"""Normalized channel planes: HWC uint8 to the CHW float32 image Pixtral's model takes.

The kernels' patch layouts cut patch rows (Qwen-VL); Pixtral keeps the whole image as
``[3, H, W]`` planes, so this small numpy layout lives here. The values are the
kernels' exact rescale+normalize table (``ChannelNorm.apply_image``).
"""

from __future__ import annotations

import numpy as np

from mm_framework.kernels import ChannelNorm, check_rgb

def normalize_planes(rgb: np.ndarray, norm: ChannelNorm) -> np.ndarray:
    """``out[c, y, x] = norm.lut[c][rgb[y, x, c]]`` as C-contiguous float32 ``[3, H, W]``:
    :meth:`ChannelNorm.apply_image` (its native program, its f32 program or the gather; row
    windows fan out, each writing only its own rows, so every thread count gives the same
    bytes)."""
    check_rgb(rgb, "pixtral planes")
    out = np.empty((3, *rgb.shape[:2]), dtype=np.float32)
    norm.apply_image(rgb, out)
    return out
