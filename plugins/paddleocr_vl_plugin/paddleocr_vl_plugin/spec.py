"""The ``paddleocr_vl`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "paddleocr_vl", **fields}``; the factory receives the fields without
``"family"``. Every field is read through :class:`mm_framework.plugin.SpecFields` (unknown and
missing fields, types and ranges, each error naming the field), then the pixel bounds are
checked against the patch grid. Facts behind the fields: docs/families/paddleocr_vl.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import plugin as mmp

FAMILY = "paddleocr_vl"
# The most pixels any image may be scaled to: the core's default decode bound (Pillow's
# decompression-bomb limit); min_pixels pulls every image up to it, so above it a typo
# allocates gigabytes per image.
MAX_IMAGE_PIXELS = mmf.Limits().max_image_pixels
# The ERNIE-4.5 vocabulary's ids are int32.
MAX_ID = 2**31 - 1
# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD, PaddleOCRVLImageProcessor's statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
# "composite": transformers' convert_to_rgb of a PIL image (alpha over white); "drop":
# Pillow's convert("RGB") (transformers' load_image of a path or URL).
ALPHA_MODES = ("composite", "drop")

REQUIRED = ("image_token_id", "patch_size", "merge_size", "temporal_patch_size", "min_pixels", "max_pixels",
            "image_mean", "image_std")
DEFAULTS: dict[str, Any] = {"backend": "pil", "alpha": "composite", "exif_transpose": False}


@attrs.frozen
class PaddleOcrVlSpec:
    """A validated ``paddleocr_vl`` spec. Build it with :func:`parse_spec`."""

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

    @property
    def factor(self) -> int:
        """Side multiple of the resized image: one merged block of patches."""
        return self.patch_size * self.merge_size

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        d["image_mean"], d["image_std"] = list(self.image_mean), list(self.image_std)
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> PaddleOcrVlSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`PaddleOcrVlSpec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    spec = PaddleOcrVlSpec(
        image_token_id=f.integer("image_token_id", minimum=0, maximum=MAX_ID),
        patch_size=f.integer("patch_size", minimum=1),
        merge_size=f.integer("merge_size", minimum=1),
        # Each patch repeats the image this many times along its channels; a typo must not
        # multiply every feature (released checkpoints use 1).
        temporal_patch_size=f.integer("temporal_patch_size", minimum=1, maximum=16),
        # transformers refuses a zero (falsy) shortest_edge/longest_edge at call time.
        min_pixels=f.integer("min_pixels", minimum=1, maximum=MAX_IMAGE_PIXELS),
        max_pixels=f.integer("max_pixels", minimum=1),
        image_mean=f.floats("image_mean"),
        # transformers would divide by zero and emit inf/nan features; refuse instead.
        image_std=f.floats("image_std", nonzero=True),
        # "pil" clones PaddleOCRVLImageProcessorPil, "torchvision" PaddleOCRVLImageProcessor.
        backend=f.choice("backend", mmp.PatchGrid.BACKENDS),
        alpha=f.choice("alpha", ALPHA_MODES),
        exif_transpose=f.boolean("exif_transpose"),
    )
    f.smart_resize_bounds(spec.factor, spec.min_pixels, spec.max_pixels, MAX_IMAGE_PIXELS)
    return spec


# transformers 5.24's PaddleOCRVLImageProcessor(Pil) class defaults (384*384 .. 1536*1536
# pixels, 14-pixel patches merged 2x2, one temporal slot, CLIP statistics) and
# PaddleOCRVLConfig's image_token_id (<|IMAGE_PLACEHOLDER|> in the ERNIE-4.5 vocabulary).
PRESETS: dict[str, dict[str, Any]] = {
    "paddleocr_vl": PaddleOcrVlSpec(
        image_token_id=100295, patch_size=14, merge_size=2, temporal_patch_size=1, min_pixels=384 * 384,
        max_pixels=1536 * 1536, image_mean=CLIP_MEAN, image_std=CLIP_STD,
    ).to_dict(),
}
