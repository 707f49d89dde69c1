"""``PatchGrid``: the still-image path that Qwen2-VL-style families share (qwen_vl,
paddleocr_vl).

Their image processors resize an image to a multiple of ``patch_size * merge_size`` that a
sizing function picks from its size and a pixel budget (``smart_resize`` or a variant),
with bicubic on one of two backends, then cut it into normalized patches. The geometry is
``Grid(1, h / patch, w / patch)``; an image costs one token per merged block, and its
M-RoPE positions are :func:`mm_framework.mrope_positions.image_only`. A family builds one
``PatchGrid`` from its spec and keeps only what differs: the sizing variant, the patch
layout, and anything before the processor (qwen-vl-utils' resize).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import mrope_positions
from .carriers import DecodeOptions, Grid, MRope
from .checks import check_rgb
from .errors import InternalError, InvalidInputError
from .kernels import ChannelNorm, channel_norm_fused, channel_norm_pil, resize_rgb, resize_wants_source, smart_resize


__all__ = ["PatchGrid"]

Sizing = Callable[[int, int, int, int, int], tuple[int, int]]


class PatchGrid:
    """One family's image path, built from its validated spec values; immutable, so
    thread-safe. ``sizing(height, width, factor, min_pixels, max_pixels) -> (h, w)``."""

    # backend -> (the kernels' resizer, the rescale + normalize table): "pil" clones
    # transformers' PIL image processors (Pillow's bicubic, f64 rescale then normalize),
    # "torchvision" its torchvision ones (ATen's uint8 antialiased bicubic, the fused f32
    # rescale + normalize). A spec's backend field is one of its keys.
    BACKENDS: dict[str, tuple[str, Callable[..., ChannelNorm]]] = {
        "pil": ("pil_bicubic", channel_norm_pil),
        "torchvision": ("aten_u8", channel_norm_fused),
    }

    def __init__(self, family: str, *, patch_size: int, merge_size: int, min_pixels: int, max_pixels: int,
                 image_mean: Sequence[float], image_std: Sequence[float], backend: str, alpha: str,
                 exif_transpose: bool, sizing: Sizing = smart_resize) -> None:
        self.family = family
        self.patch_size, self.merge_size = patch_size, merge_size
        self.factor = patch_size * merge_size
        self.min_pixels, self.max_pixels = min_pixels, max_pixels
        self._sizing = sizing
        self.resample, norm = self.BACKENDS[backend]
        self.norm = norm(image_mean, image_std)
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self.decode_options = DecodeOptions(alpha=alpha, exif_transpose=exif_transpose,
                                            keep_source=resize_wants_source(self.resample))

    def target_size(self, width: int, height: int) -> tuple[int, int]:
        """``(width, height)`` the processor resizes a ``width`` x ``height`` image to;
        ``MediaError`` when the sizing refuses it."""
        th, tw = self._sizing(height, width, self.factor, self.min_pixels, self.max_pixels)
        return tw, th

    def grid(self, width: int, height: int) -> Grid:
        tw, th = self.target_size(width, height)
        return Grid(1, th // self.patch_size, tw // self.patch_size)

    def tokens(self, grid: Grid) -> int:
        return grid.t * grid.h * grid.w // (self.merge_size**2)

    def resized(self, rgb: np.ndarray, source: Any = None) -> np.ndarray:
        """The uint8 HWC image the patches are cut from (``rgb`` itself when its size is
        right already: transformers copies then, with the same bytes). ``source``: the
        Pillow image ``rgb`` was decoded to, when the decoder lent it."""
        h, w = rgb.shape[:2]
        tw, th = self.target_size(w, h)
        if (th, tw) == (h, w):
            return rgb
        return resize_rgb(rgb, tw, th, self.resample, source=source)

    def stored(self, pixels: np.ndarray) -> tuple[np.ndarray, Grid]:
        """``pixels`` checked as what :meth:`resized` gives (``InvalidInputError`` naming
        the family otherwise), and their grid."""
        rgb = check_rgb(pixels, "stored pixels", error=InvalidInputError)
        h, w = rgb.shape[:2]
        if h % self.factor or w % self.factor:
            raise InvalidInputError(f"{self.family}: stored pixels {w}x{h} are not multiples of the factor "
                                    f"{self.factor}")
        return rgb, Grid(1, h // self.patch_size, w // self.patch_size)

    def as_grid(self, geometry: Any) -> Grid:
        if not isinstance(geometry, Grid):
            raise InternalError(f"{self.family}: expected a Grid geometry, got {type(geometry).__name__}")
        return geometry

    def positions(self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Any]) -> MRope:
        """The M-RoPE positions of a prompt whose items are all still images."""
        items = sorted(((s, e, self.as_grid(g)) for (s, e), g in zip(offsets, geometries)), key=lambda it: it[0])
        return mrope_positions.image_only(input_len, items, self.merge_size)
