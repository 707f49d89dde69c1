"""Normalized channel planes: HWC uint8 to the CHW float32 image Pixtral's model takes.

The kernels' patch layouts cut patch rows (Qwen-VL); Pixtral keeps the whole image as
``[3, H, W]`` planes, so this small numpy layout lives here. The values are the
kernels' exact rescale+normalize table (``ChannelNorm``): its f32 program when one
reproduces the table bit for bit, else the table itself as a gather.
"""

from __future__ import annotations

import numpy as np

from mm_framework.kernels import ChannelNorm, check_rgb, for_chunks, rows_per_worker

# Pixels per inner band: one channel's u8 source and f32 destination stay in L2.
_BAND_PIXELS = 1 << 16


def normalize_planes(rgb: np.ndarray, norm: ChannelNorm) -> np.ndarray:
    """``out[c, y, x] = norm.lut[c][rgb[y, x, c]]`` as C-contiguous float32 ``[3, H, W]``.

    Row windows fan out over ``for_chunks``; each writes only its own rows, so every
    thread count gives the same bytes.
    """
    check_rgb(rgb, "pixtral planes")
    h, w = rgb.shape[:2]
    out = np.empty((3, h, w), dtype=np.float32)
    band = max(1, _BAND_PIXELS // w)

    def rows(start: int, stop: int) -> None:
        for a in range(start, stop, band):
            b = min(stop, a + band)
            for c in range(3):
                norm.apply(c, rgb[a:b, :, c], out[c, a:b])

    for_chunks(rows, h, rows_per_worker(h, h * w))
    return out
