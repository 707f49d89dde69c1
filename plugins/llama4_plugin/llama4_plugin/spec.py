"""The ``llama4`` spec: its fields, their validation, and the shipped presets.

One family, transformers 5.24's ``Llama4Processor`` over ``Llama4ImageProcessor`` (a
torchvision-only processor). Every field is read through :class:`mm_framework.plugin.SpecFields`;
where the preset values come from: docs/families/llama4.md §1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp

FAMILY = "llama4"
MAX_ID = 2**31 - 1
MAX_TILE = 2048
# The resampler names of transformers' ``resample`` 1, 2, 3; the processor runs each as
# tvF.resize of a uint8 tensor with antialias (ATen's uint8 kernels). NEAREST is not cloned.
RESAMPLES = tuple(kernels.TORCHVISION_RESAMPLERS)
# The largest image the core decodes by default: one item's frames (its canvas of tiles and
# the thumbnail) may not hold more pixels than that, or a typo allocates gigabytes per image.
MAX_STACK_PIXELS = mmf.Limits().max_image_pixels

TOKEN_FIELDS = ("image_token_id", "image_start_token_id", "image_end_token_id", "patch_token_id",
                "tile_x_separator_token_id", "tile_y_separator_token_id")
REQUIRED = (*TOKEN_FIELDS, "tile_size", "max_patches", "patch_size", "pixel_shuffle_ratio", "rescale_factor",
            "image_mean", "image_std")
DEFAULTS: dict[str, Any] = {
    "resample": "pil_bilinear",
    "resize_to_max_canvas": False,
    "do_rescale": True,
    "do_normalize": True,
    # transformers' PIL-object entry (convert_to_rgb): alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
}


@attrs.frozen
class Llama4Spec:
    """A validated ``llama4`` spec. Build it with :func:`parse_spec`."""

    # <|image|>: the prompt's placeholder (the processor's fake_image_token) and, inside the
    # expansion, the marker before the thumbnail's patches (its image_token).
    image_token_id: int
    image_start_token_id: int
    image_end_token_id: int
    patch_token_id: int
    tile_x_separator_token_id: int
    tile_y_separator_token_id: int
    # size {"height": s, "width": s}: the reference refuses a non-square size.
    tile_size: int
    max_patches: int
    patch_size: int
    pixel_shuffle_ratio: float
    rescale_factor: float
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    resample: str = "pil_bilinear"
    resize_to_max_canvas: bool = False
    do_rescale: bool = True
    do_normalize: bool = True
    alpha: str = "composite"
    exif_transpose: bool = False

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` (torchvision's)."""
        return kernels.TORCHVISION_RESAMPLERS[self.resample]

    @property
    def downsample_ratio(self) -> int:
        """``Llama4Processor.downsample_ratio``: ``int(round(1 / pixel_shuffle_ratio ** 2))``."""
        return int(round(1.0 / (self.pixel_shuffle_ratio**2)))

    @property
    def tokens_per_tile(self) -> int:
        """``<|patch|>`` tokens per tile: ``(s // patch) * (s // patch) // downsample_ratio``."""
        side = self.tile_size // self.patch_size
        return side * side // self.downsample_ratio

    @property
    def feature_dtype(self) -> str:
        """bf16 with normalize (the reference rescales and normalizes in bfloat16), else the
        float32 of ``uint8 tensor * rescale_factor``."""
        return "bf16" if self.do_normalize else "f32"

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std"):
            d[key] = list(d[key])
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> Llama4Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`Llama4Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    token = {"minimum": 0, "maximum": MAX_ID}
    spec = Llama4Spec(
        **{name: f.integer(name, **token) for name in TOKEN_FIELDS},
        tile_size=f.integer("tile_size", minimum=1, maximum=MAX_TILE),
        max_patches=f.integer("max_patches", minimum=1),
        patch_size=f.integer("patch_size", minimum=1),
        pixel_shuffle_ratio=f.number("pixel_shuffle_ratio", positive=True),
        rescale_factor=f.number("rescale_factor", positive=True),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        resample=f.choice("resample", RESAMPLES),
        resize_to_max_canvas=f.boolean("resize_to_max_canvas"),
        do_rescale=f.boolean("do_rescale"),
        do_normalize=f.boolean("do_normalize"),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
    )
    _cross_check(f, spec)
    return spec


def _cross_check(f: mmp.SpecFields, s: Llama4Spec) -> None:
    if not s.do_rescale:
        # Without rescale the processor hands uint8 pixels to tvF.normalize (which refuses
        # them) or returns them unnormalized: neither is a feature.
        raise f.error("do_rescale", "must be true (the reference refuses or returns uint8 pixels without it)")
    ids = [getattr(s, name) for name in TOKEN_FIELDS]
    if len(set(ids)) != len(ids):
        raise f.error("patch_token_id", f"the marker ids must all differ: {dict(zip(TOKEN_FIELDS, ids))}")
    if s.tile_size < s.patch_size:
        raise f.error("patch_size", f"={s.patch_size} exceeds tile_size={s.tile_size}")
    if s.downsample_ratio < 1 or s.tokens_per_tile < 1:
        raise f.error("pixel_shuffle_ratio", f"={s.pixel_shuffle_ratio} leaves {s.tokens_per_tile} <|patch|> tokens "
                                             f"per tile of {s.tile_size} with patch_size {s.patch_size}")
    frames = s.max_patches + (1 if s.max_patches > 1 else 0)
    if frames * s.tile_size**2 > MAX_STACK_PIXELS:
        raise f.error("max_patches", f"={s.max_patches}: up to {frames} frames of tile_size ** 2 make "
                                     f"{frames * s.tile_size ** 2} pixels per item, above the {MAX_STACK_PIXELS} "
                                     "the core decodes by default")
    if s.do_normalize:
        try:
            kernels.normalize_lut_bf16(s.image_mean, s.image_std, s.rescale_factor)
        except mmf.SpecError as e:
            raise f.error("image_std", str(e)) from None


# meta-llama/Llama-4-Scout-17B-16E-Instruct (docs/families/llama4.md §1): preprocessor_config.json
# (Llama4ImageProcessorFast: size 336x336, max_patches 16, resample 2 = BILINEAR, resize_to_max_canvas
# false, mean = std = 0.5, rescale 1/255), processor_config.json / Llama4Processor (patch_size 14),
# config.json's vision_config (pixel_shuffle_ratio 0.5) and the Llama 4 tokenizer's special tokens
# (<|image_start|> 200080, <|image_end|> 200081, <|tile_x_separator|> 200084,
# <|tile_y_separator|> 200085, <|image|> 200090, <|patch|> 200092).
_SCOUT = Llama4Spec(
    image_token_id=200090, image_start_token_id=200080, image_end_token_id=200081, patch_token_id=200092,
    tile_x_separator_token_id=200084, tile_y_separator_token_id=200085, tile_size=336, max_patches=16,
    patch_size=14, pixel_shuffle_ratio=0.5, rescale_factor=0.00392156862745098, image_mean=(0.5, 0.5, 0.5),
    image_std=(0.5, 0.5, 0.5),
)
PRESETS: dict[str, dict[str, Any]] = {
    "llama4_scout_17b_16e_instruct": _SCOUT.to_dict(),
    # meta-llama/Llama-4-Maverick-17B-128E-Instruct: the same processor files, vision tower and tokenizer.
    "llama4_maverick_17b_128e_instruct": _SCOUT.to_dict(),
}
