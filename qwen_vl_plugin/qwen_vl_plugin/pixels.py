"""The patches' dtype: the processor's f32 ``pixel_values``, or (``pixels="u8"``) the resized
u8 pixels in the same layout with the :class:`~mm_framework.plugin.PixelNorm` that gives
those f32 values back, for an engine that normalizes on its own device.
"""

from __future__ import annotations

import numpy as np

from mm_framework import plugin as mmp
from mm_framework.kernels import ChannelNorm

from .spec import QwenVlSpec


def pixel_norm(spec: QwenVlSpec, norm: ChannelNorm) -> mmp.PixelNorm | None:
    """With ``pixels="u8"``, what turns the patches back into ``norm``'s f32 values: the
    columns are ``(c, t, py, px)``, so each channel spans ``tps * ps * ps`` of them."""
    if spec.pixels == "f32":
        return None
    return mmp.PixelNorm(norm.lut, spec.temporal_patch_size * spec.patch_size**2)


def patch_tensor(patches: np.ndarray, norm: mmp.PixelNorm | None) -> mmp.Tensor:
    """The feature of patches :func:`~mm_framework.kernels.patchify_merged_blocks` wrote
    (u8 when the spec asks for them, then with their ``norm``)."""
    return mmp.Tensor(patches, "f32") if norm is None else mmp.Tensor.u8(patches, norm)
