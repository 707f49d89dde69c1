"""``PatchGrid`` and ``PatchGridSpec``: the still-image path that Qwen2-VL-style families
share (qwen_vl, paddleocr_vl), and its spec fields.

Their image processors resize an image to a multiple of ``patch_size * merge_size`` that a
sizing function picks from its size and a pixel budget (``smart_resize`` or a variant),
with bicubic on one of two backends, then cut it into normalized patches. The geometry is
``Grid(1, h / patch, w / patch)``; an image costs one token per merged block, and its
M-RoPE positions are :func:`mm_framework.mrope_positions.image_only`. A family's spec extends
``PatchGridSpec`` (its fields read by :meth:`PatchGridSpec.read`), the family builds one
``PatchGrid`` from it and keeps only what differs: the sizing variant, the patch layout,
and anything before the processor (qwen-vl-utils' resize).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np

from . import mrope_positions
from .carriers import DecodeOptions, Grid, MRope, PixelNorm, Tensor
from .checks import check_rgb
from .errors import InternalError, InvalidInputError
from .spec_fields import SpecFields
from .kernels import (
    Bf16Norm, ChannelNorm, channel_norm_fused, channel_norm_pil, patch_dtype, resize_rgb, resize_wants_source,
    smart_resize,
)


__all__ = ["PatchGrid", "PatchGridSpec", "PatchPixels"]


@attrs.frozen
class PatchGridSpec:
    """The image fields of a Qwen2-VL-style spec; a family's spec class extends it."""

    image_token_id: int
    patch_size: int
    merge_size: int
    temporal_patch_size: int
    min_pixels: int
    max_pixels: int
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    backend: str = "pil"
    alpha: str = "composite"
    exif_transpose: bool = False
    pixels: str = "f32"

    REQUIRED = ("image_token_id", "patch_size", "merge_size", "temporal_patch_size", "min_pixels", "max_pixels",
                "image_mean", "image_std")
    DEFAULTS = {"backend": "pil", "alpha": "composite", "exif_transpose": False, "pixels": "f32"}

    @property
    def factor(self) -> int:
        """Side multiple of the resized image: one merged block of patches."""
        return self.patch_size * self.merge_size

    @classmethod
    def read(cls, f: SpecFields, *, max_image_pixels: int, alpha_modes: Sequence[str],
             max_id: int | None = None, max_temporal: int | None = None,
             pixels: Sequence[str] = ("f32",)) -> dict[str, Any]:
        """These fields read through ``f`` (each refusal a ``SpecError`` naming the field),
        with the rules between them (:meth:`SpecFields.smart_resize_bounds`); ``backend`` is
        one of :attr:`PatchGrid.BACKENDS`, ``pixels`` one of those the family writes
        (of :attr:`PatchPixels.KINDS`: a family offering "u8" builds its features with
        :attr:`PatchGrid.pixels`)."""
        fields = {
            "image_token_id": f.integer("image_token_id", minimum=0, maximum=max_id),
            "patch_size": f.integer("patch_size", minimum=1),
            "merge_size": f.integer("merge_size", minimum=1),
            "temporal_patch_size": f.integer("temporal_patch_size", minimum=1, maximum=max_temporal),
            # transformers refuses a zero (falsy) shortest_edge/longest_edge at call time.
            "min_pixels": f.integer("min_pixels", minimum=1, maximum=max_image_pixels),
            "max_pixels": f.integer("max_pixels", minimum=1),
            "image_mean": f.floats("image_mean"),
            # transformers would divide by zero and emit inf/nan features; refuse instead.
            "image_std": f.floats("image_std", nonzero=True),
            "backend": f.choice("backend", PatchGrid.BACKENDS),
            "alpha": f.choice("alpha", alpha_modes),
            "exif_transpose": f.boolean("exif_transpose"),
            "pixels": f.choice("pixels", pixels),
        }
        factor = fields["patch_size"] * fields["merge_size"]
        f.smart_resize_bounds(factor, fields["min_pixels"], fields["max_pixels"], max_image_pixels)
        return fields

    def image_fields(self) -> dict[str, Any]:
        """These fields as JSON-ready values (a family's ``to_dict`` adds its own); ``pixels``
        only when it is not the default, so f32 specs keep the dict they always had."""
        d = {a.name: getattr(self, a.name) for a in attrs.fields(PatchGridSpec)}
        d["image_mean"], d["image_std"] = list(self.image_mean), list(self.image_std)
        if self.pixels == "f32":
            del d["pixels"]
        return d


@attrs.frozen
class PatchPixels:
    """The patches' dtype: the processor's normalized f32 ``pixel_values``; (``pixels="u8"``)
    the resized uint8 pixels in the same layout, with the :class:`PixelNorm` that turns them
    back into those f32 values byte for byte; or (``pixels="bf16"``) those f32 values rounded
    to bfloat16 as torch rounds them. ``columns`` is how many consecutive values of a patch
    row hold one channel (``temporal_patch_size * patch_size**2`` for a ``(c, t, py, px)``
    row)."""

    norm: ChannelNorm
    u8: PixelNorm | None
    bf16: Bf16Norm | None = None

    # "f32": the processor's pixel_values; "u8": the resized pixels in the same patch layout,
    # for an engine that normalizes on its device (vLLM's mm_device_do_normalize); "bf16":
    # pixel_values as an engine that casts them to a bfloat16 model receives them (vLLM
    # casts floating outputs to the model's dtype), written once at half the bytes.
    KINDS: ClassVar[tuple[str, ...]] = ("f32", "u8", "bf16")

    @classmethod
    def of(cls, pixels: str, norm: ChannelNorm, columns: int) -> PatchPixels:
        if pixels not in cls.KINDS:
            raise InternalError(f"pixels must be one of {cls.KINDS}, got {pixels!r}")
        return cls(norm, PixelNorm(norm.lut, columns) if pixels == "u8" else None,
                   Bf16Norm(norm) if pixels == "bf16" else None)

    @property
    def kernel_norm(self) -> ChannelNorm | Bf16Norm | None:
        """What the patch kernel normalizes with: ``None`` (copy the uint8 values) for u8."""
        return None if self.u8 is not None else self.bf16 or self.norm

    @property
    def dtype(self) -> type[np.generic]:
        return patch_dtype(self.kernel_norm)

    def tensor(self, patches: np.ndarray) -> Tensor:
        """The feature of patches the kernel wrote with :attr:`kernel_norm`."""
        if self.u8 is not None:
            return Tensor.u8(patches, self.u8)
        return Tensor.bf16(patches) if self.bf16 is not None else Tensor(patches, "f32")


Sizing = Callable[[int, int, int, int, int], tuple[int, int]]


class PatchGrid:
    """One family's image path, built from its validated spec; immutable, so thread-safe.
    ``sizing(height, width, factor, min_pixels, max_pixels) -> (h, w)``."""

    # backend -> (the kernels' resizer, the rescale + normalize table): "pil" clones
    # transformers' PIL image processors (Pillow's bicubic, f64 rescale then normalize),
    # "torchvision" its torchvision ones (ATen's uint8 antialiased bicubic, the fused f32
    # rescale + normalize). A spec's backend field is one of its keys.
    BACKENDS: dict[str, tuple[str, Callable[..., ChannelNorm]]] = {
        "pil": ("pil_bicubic", channel_norm_pil),
        "torchvision": ("aten_u8", channel_norm_fused),
    }

    def __init__(self, family: str, spec: PatchGridSpec, sizing: Sizing = smart_resize) -> None:
        self.family = family
        self.patch_size, self.merge_size, self.factor = spec.patch_size, spec.merge_size, spec.factor
        self.min_pixels, self.max_pixels = spec.min_pixels, spec.max_pixels
        self._sizing = sizing
        self.resample, norm = self.BACKENDS[spec.backend]
        self.norm = norm(spec.image_mean, spec.image_std)
        self.pixels = PatchPixels.of(spec.pixels, self.norm, spec.temporal_patch_size * spec.patch_size**2)
        # The decoder lends its Pillow image when the resize runs through Pillow.
        self.decode_options = DecodeOptions(alpha=spec.alpha, exif_transpose=spec.exif_transpose,
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
