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
# Each patch repeats the image this many times along its channels; a typo must not
# multiply every feature (released checkpoints use 1).
MAX_TEMPORAL = 16
REQUIRED = mmp.PatchGridSpec.REQUIRED
DEFAULTS = mmp.PatchGridSpec.DEFAULTS


@attrs.frozen
class PaddleOcrVlSpec(mmp.PatchGridSpec):
    """A validated ``paddleocr_vl`` spec (the image fields of every Qwen2-VL-style family,
    nothing else). Build it with :func:`parse_spec`."""

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        return {"family": FAMILY, **self.image_fields()}


def parse_spec(params: Mapping[str, Any]) -> PaddleOcrVlSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`PaddleOcrVlSpec`.
    ``backend`` "pil" clones PaddleOCRVLImageProcessorPil, "torchvision" PaddleOCRVLImageProcessor."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    return PaddleOcrVlSpec(**mmp.PatchGridSpec.read(f, max_image_pixels=MAX_IMAGE_PIXELS, alpha_modes=ALPHA_MODES,
                                                    max_id=MAX_ID, max_temporal=MAX_TEMPORAL))


# transformers 5.24's PaddleOCRVLImageProcessor(Pil) class defaults (384*384 .. 1536*1536
# pixels, 14-pixel patches merged 2x2, one temporal slot, CLIP statistics) and
# PaddleOCRVLConfig's image_token_id (<|IMAGE_PLACEHOLDER|> in the ERNIE-4.5 vocabulary).
PRESETS: dict[str, dict[str, Any]] = {
    "paddleocr_vl": PaddleOcrVlSpec(
        image_token_id=100295, patch_size=14, merge_size=2, temporal_patch_size=1, min_pixels=384 * 384,
        max_pixels=1536 * 1536, image_mean=CLIP_MEAN, image_std=CLIP_STD,
    ).to_dict(),
}
