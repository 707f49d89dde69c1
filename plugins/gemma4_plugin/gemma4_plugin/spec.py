"""The ``gemma4`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "gemma4", **fields}``; the factory receives the fields without
``"family"``. Every field is read through :class:`mm_framework.plugin.SpecFields` and then
checked against the others. Facts behind the fields and defaults: docs/families/gemma4.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework import kernels
from mm_framework import plugin as mmp

FAMILY = "gemma4"
# Ids are int32 in the Gemma vocabulary.
MAX_ID = 2**31 - 1
# The soft-token budgets Gemma4ImageProcessor accepts (it raises on any other).
SOFT_TOKEN_BUDGETS = (70, 140, 280, 560, 1120)
# Released checkpoints use 16-pixel patches pooled 3x3; the bounds keep a typo from making
# a feature of gigabytes (1120 * 8**2 patches of 64x64x3 float32 is already 3.5 GiB).
MAX_PATCH_SIZE = 64
MAX_POOLING = 4
# The Pillow filters transformers' ``resample`` 1, 2 and 3 name (LANCZOS, BILINEAR, BICUBIC).
RESAMPLES = ("pil_bilinear", "pil_bicubic", "pil_lanczos")
# backend -> resample -> the mm_framework resizer of that filter. "pil" clones
# Gemma4ImageProcessorPil, "torchvision" Gemma4ImageProcessor (tvF.resize of uint8 tensors
# with antialias, ATen's uint8 path).
BACKENDS: dict[str, dict[str, str]] = {
    "pil": {r: r for r in RESAMPLES},
    "torchvision": kernels.TORCHVISION_RESAMPLERS,
}

REQUIRED = ("image_token_id", "boi_token_id", "eoi_token_id")
# Gemma4ImageProcessorPil's (and Gemma4ImageProcessor's) class attributes: pixels in [0, 1],
# the identity normalization switched off.
DEFAULTS: dict[str, Any] = {
    "patch_size": 16,
    "max_soft_tokens": 280,
    "pooling_kernel_size": 3,
    "backend": "pil",
    "resample": "pil_bicubic",
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": False,
    "image_mean": [0.0, 0.0, 0.0],
    "image_std": [1.0, 1.0, 1.0],
    # transformers' PIL-object entry: alpha composited on white, no EXIF transpose.
    "alpha": "composite",
    "exif_transpose": False,
}


@attrs.frozen
class Gemma4Spec:
    """A validated ``gemma4`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    boi_token_id: int
    eoi_token_id: int
    patch_size: int = 16
    max_soft_tokens: int = 280
    pooling_kernel_size: int = 3
    backend: str = "pil"
    resample: str = "pil_bicubic"
    do_rescale: bool = True
    rescale_factor: float = 1 / 255
    do_normalize: bool = False
    image_mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    image_std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    alpha: str = "composite"
    exif_transpose: bool = False

    @property
    def max_patches(self) -> int:
        """The patch rows of every image's feature (the processor pads to it)."""
        return self.max_soft_tokens * self.pooling_kernel_size**2

    @property
    def patch_dim(self) -> int:
        """Values per patch row: ``patch_size**2 * 3``, pixel-major, channel-minor."""
        return self.patch_size**2 * 3

    @property
    def resizer(self) -> str:
        """The :func:`mm_framework.kernels.resize_rgb` resampler of ``resample`` on ``backend``."""
        return BACKENDS[self.backend][self.resample]

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        for key in ("image_mean", "image_std"):
            d[key] = list(d[key])
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> Gemma4Spec:
    """Validate the spec fields (without ``"family"``) into a :class:`Gemma4Spec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    token = {"minimum": 0, "maximum": MAX_ID}
    spec = Gemma4Spec(
        image_token_id=f.integer("image_token_id", **token),
        boi_token_id=f.integer("boi_token_id", **token),
        eoi_token_id=f.integer("eoi_token_id", **token),
        patch_size=f.integer("patch_size", minimum=1, maximum=MAX_PATCH_SIZE),
        max_soft_tokens=f.integer("max_soft_tokens", minimum=1),
        pooling_kernel_size=f.integer("pooling_kernel_size", minimum=1, maximum=MAX_POOLING),
        backend=f.choice("backend", BACKENDS),
        resample=f.choice("resample", RESAMPLES),
        do_rescale=f.boolean("do_rescale"),
        rescale_factor=f.number("rescale_factor", positive=True),
        do_normalize=f.boolean("do_normalize"),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        alpha=f.choice("alpha", ("composite", "drop")),
        exif_transpose=f.boolean("exif_transpose"),
    )
    if spec.max_soft_tokens not in SOFT_TOKEN_BUDGETS:
        raise f.error("max_soft_tokens", f"must be one of {list(SOFT_TOKEN_BUDGETS)} (the budgets "
                                         f"Gemma4ImageProcessor accepts), got {spec.max_soft_tokens}")
    if not (spec.do_rescale or spec.do_normalize):
        # transformers then returns the uint8 pixels themselves; no float feature to match.
        raise f.error("do_normalize", "and do_rescale cannot both be false (the output would be uint8 pixels)")
    markers = {"image_token_id": spec.image_token_id, "boi_token_id": spec.boi_token_id,
               "eoi_token_id": spec.eoi_token_id}
    if len(set(markers.values())) != 3:
        raise f.error("eoi_token_id", f"image_token_id, boi_token_id and eoi_token_id must differ, got {markers}")
    return spec


# google/gemma-4 image-text checkpoints: Gemma4Config's token ids (image 258880, boi 255999,
# eoi 258882; the model card's checkpoint google/gemma-4-e2b-it) and the image processor's
# class defaults (16-pixel patches, 280 soft tokens pooled 3x3, bicubic, rescale 1/255, no
# normalization), which the published preprocessor_config.json is taken to repeat: the hub is
# unreachable here, so those values are unverified (docs/families/gemma4.md).
_GEMMA4 = Gemma4Spec(image_token_id=258880, boi_token_id=255999, eoi_token_id=258882)
PRESETS: dict[str, dict[str, Any]] = {
    "gemma4": _GEMMA4.to_dict(),
    "gemma4_torchvision": attrs.evolve(_GEMMA4, backend="torchvision").to_dict(),
}
