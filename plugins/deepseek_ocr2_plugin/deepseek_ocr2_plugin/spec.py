"""The ``deepseek_ocr2`` spec: its fields, their validation, and the shipped preset.

Every field is read through :class:`mm_framework.plugin.SpecFields`. ``size`` is the image
processor's ``size["height"]`` (the global view's side with cropping, and what the token
count reads), ``tile_size`` the local crops' side; ``crop_to_patches``, ``min_patches`` and
``max_patches`` are what ``DeepseekOcr2Processor`` passes its image processor (its
``images_kwargs`` defaults, or a call's options). Where the preset values come from:
docs/families/deepseek_ocr2.md §1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import kernels
from mm_framework import plugin as mmp

FAMILY = "deepseek_ocr2"
MAX_ID = 2**31 - 1
MAX_SIDE = 4096
# The grid enumeration is quadratic in max_patches; 36 tiles is six times the published cap.
MAX_PATCHES = 36
# One item's views (the global square and every local crop) may not hold more pixels than the
# core decodes by default, or a typo allocates gigabytes per image.
MAX_STACK_PIXELS = mmf.Limits().max_image_pixels
# The Pillow filters transformers' ``resample`` 1, 2 and 3 name (LANCZOS, BILINEAR, BICUBIC).
RESAMPLES = ("pil_bicubic", "pil_lanczos", "pil_bilinear")
# backend -> resample -> the mm_framework resizer: "pil" clones DeepseekOcr2ImageProcessorPil,
# "torchvision" DeepseekOcr2ImageProcessor (tvF.resize of uint8 tensors: ATen's uint8 path).
BACKENDS: dict[str, dict[str, str]] = {
    "pil": {r: r for r in RESAMPLES},
    "torchvision": kernels.TORCHVISION_RESAMPLERS,
}

REQUIRED = ("image_token_id", "size", "tile_size", "patch_size", "downsample_ratio", "rescale_factor",
            "image_mean", "image_std")
DEFAULTS: dict[str, Any] = {
    "backend": "pil",
    "resample": "pil_bicubic",
    "crop_to_patches": True,
    "min_patches": 2,
    "max_patches": 6,
    "background_color": [127, 127, 127],
    "do_rescale": True,
    "do_normalize": True,
    # transformers' PIL-object entry (convert_to_rgb): alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
}


@attrs.frozen
class DeepseekOcr2Spec:
    """A validated ``deepseek_ocr2`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    size: int
    tile_size: int
    patch_size: int
    downsample_ratio: int
    rescale_factor: float
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    backend: str = "pil"
    resample: str = "pil_bicubic"
    crop_to_patches: bool = True
    min_patches: int = 2
    max_patches: int = 6
    background_color: tuple[int, int, int] = (127, 127, 127)
    do_rescale: bool = True
    do_normalize: bool = True
    alpha: str = "composite"
    exif_transpose: bool = False

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` on ``backend``."""
        return BACKENDS[self.backend][self.resample]

    @property
    def global_side(self) -> int:
        """The global view's side: ``size`` with cropping, ``tile_size`` without (``_preprocess``)."""
        return self.size if self.crop_to_patches else self.tile_size

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std", "background_color"):
            d[key] = list(d[key])
        return {"family": FAMILY, **d}


def _colour(f: mmp.SpecFields, params: Mapping[str, Any]) -> tuple[int, int, int]:
    value = params.get("background_color", DEFAULTS["background_color"])
    if (not isinstance(value, (list, tuple)) or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 255 for v in value)):
        raise f.error("background_color", f"must be 3 integers in 0..255 (an RGB fill), got {value!r}")
    return tuple(int(v) for v in value)


def parse_spec(params: Mapping[str, Any]) -> DeepseekOcr2Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`DeepseekOcr2Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    spec = DeepseekOcr2Spec(
        image_token_id=f.integer("image_token_id", minimum=0, maximum=MAX_ID),
        size=f.integer("size", minimum=1, maximum=MAX_SIDE),
        tile_size=f.integer("tile_size", minimum=1, maximum=MAX_SIDE),
        patch_size=f.integer("patch_size", minimum=1, maximum=MAX_SIDE),
        downsample_ratio=f.integer("downsample_ratio", minimum=1, maximum=MAX_SIDE),
        rescale_factor=f.number("rescale_factor", positive=True),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        backend=f.choice("backend", BACKENDS),
        resample=f.choice("resample", RESAMPLES),
        crop_to_patches=f.boolean("crop_to_patches"),
        min_patches=f.integer("min_patches", minimum=1, maximum=MAX_PATCHES),
        max_patches=f.integer("max_patches", minimum=1, maximum=MAX_PATCHES),
        background_color=_colour(f, params),
        do_rescale=f.boolean("do_rescale"),
        do_normalize=f.boolean("do_normalize"),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
    )
    _cross_check(f, spec)
    return spec


def _cross_check(f: mmp.SpecFields, s: DeepseekOcr2Spec) -> None:
    if not (s.do_rescale or s.do_normalize):
        raise f.error("do_normalize", "and do_rescale cannot both be false (the output would be uint8 pixels)")
    if s.min_patches > s.max_patches:
        # transformers then finds no grid and falls back to one tile; refused as a typo.
        raise f.error("min_patches", f"={s.min_patches} exceeds max_patches={s.max_patches}")
    crops = s.max_patches * s.tile_size**2 if s.crop_to_patches else 0
    if s.global_side**2 + crops > MAX_STACK_PIXELS:
        raise f.error("tile_size", f"={s.tile_size} with size={s.size} and max_patches={s.max_patches} makes up to "
                                   f"{s.global_side ** 2 + crops} pixels per item, above the {MAX_STACK_PIXELS} "
                                   "the core decodes by default")


# deepseek-community/DeepSeek-OCR-2 (transformers' conversion of deepseek-ai/DeepSeek-OCR-2):
# DeepseekOcr2ImageProcessor's defaults (size 1024, tile 768, BICUBIC, mean = std = 0.5, fill
# 127), DeepseekOcr2Processor's (patch 16, downsample 4, crops 2..6) and DeepseekOcr2Config's
# image_token_id 128815 (<image> in DeepSeek's tokenizer). docs/families/deepseek_ocr2.md §1
# says which of these could not be checked against the published files.
_DEEPSEEK_OCR2 = DeepseekOcr2Spec(
    image_token_id=128815, size=1024, tile_size=768, patch_size=16, downsample_ratio=4,
    rescale_factor=0.00392156862745098, image_mean=(0.5, 0.5, 0.5), image_std=(0.5, 0.5, 0.5),
)
PRESETS: dict[str, dict[str, Any]] = {"deepseek_ocr2": _DEEPSEEK_OCR2.to_dict()}
