"""Gemma 4's patch rows (shared by images and video frames).

A resized uint8 image is cut into ``patch_size`` squares in row-major order, each
flattened pixel-major with the channels innermost, through the backend's
:class:`~mm_framework.kernels.ChannelNorm`: what ``convert_image_to_patches`` (and
``convert_video_to_patches``) make of the rescaled, normalized pixels, since the table is
per channel and value.
"""

from __future__ import annotations

import numpy as np

from mm_framework import kernels


class PatchWriter:
    """Writes the patch rows of one resized image through ``norm``; immutable, so thread-safe."""

    def __init__(self, norm: kernels.ChannelNorm, patch_size: int) -> None:
        self.norm = norm
        self.patch_size = patch_size
        # Compared as bits: a -0.0 entry must not pass for 0.0.
        rows = [row.tobytes() for row in norm.lut]
        self._same_channels = rows[0] == rows[1] == rows[2]

    def __call__(self, rgb: np.ndarray, out: np.ndarray) -> None:
        """Fill ``out[:n]`` (float32 rows of ``patch_size**2 * 3``) with the ``n`` patches of ``rgb``;
        the rows after them are left as they are (the caller's zero padding)."""
        p = self.patch_size
        rows, cols = rgb.shape[0] // p, rgb.shape[1] // p
        n = rows * cols
        # The uint8 bytes are regrouped first (a quarter of the float traffic), then each
        # channel is mapped straight into its strided slot of the padded feature.
        blocks = np.ascontiguousarray(rgb.reshape(rows, p, cols, p, 3).transpose(0, 2, 1, 3, 4)).reshape(n, p * p, 3)
        if self._same_channels:
            # One table for all three channels (the published configs): one contiguous pass.
            self.norm.apply(0, blocks.reshape(n, -1), out[:n])
            return
        slots = out[:n].reshape(n, p * p, 3)
        for c in range(3):
            self.norm.apply(c, blocks[:, :, c], slots[:, :, c])
