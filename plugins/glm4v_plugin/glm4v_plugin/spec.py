"""The ``glm4v`` spec: its fields, their validation, and the shipped presets.

A spec is ``{"family": "glm4v", **fields}``; the factory receives the fields without
``"family"``. The fields are the image fields every Qwen2-VL-style family has
(:class:`mmp.PatchGridSpec`, read with their rules); GLM-4.1V, GLM-4.5V and GLM-4.6V differ
only in their values (the image token's id), so a checkpoint is a preset, not a variant.
Facts behind the fields: docs/families/glm4v.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import plugin as mmp

FAMILY = "glm4v"
# The most pixels any image may be scaled to: the core's default decode bound; min_pixels
# pulls every image up towards it, so above it a typo allocates gigabytes per image.
MAX_IMAGE_PIXELS = mmf.Limits().max_image_pixels
# The GLM-4 vocabularies (151552 entries) fit int32.
MAX_ID = 2**31 - 1
# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD, the image processors' statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
# "composite": transformers' convert_to_rgb of a PIL image (alpha over white); "drop":
# Pillow's convert("RGB") (transformers' load_image of a path or URL).
ALPHA_MODES = ("composite", "drop")
# Each patch repeats the image this many times along its channels (and the sizing counts
# the pixels that many times); a typo must not multiply every feature.
MAX_TEMPORAL = 16
REQUIRED = mmp.PatchGridSpec.REQUIRED
DEFAULTS = mmp.PatchGridSpec.DEFAULTS


@attrs.frozen
class Glm4vSpec(mmp.PatchGridSpec):
    """A validated ``glm4v`` spec. Build it with :func:`parse_spec`."""

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        return {"family": FAMILY, **self.image_fields()}


def parse_spec(params: Mapping[str, Any]) -> Glm4vSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`Glm4vSpec`. ``backend``
    "pil" clones Glm4vImageProcessorPil, "torchvision" Glm4vImageProcessor (the GLM-4.6V
    classes are the same code)."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    return Glm4vSpec(**mmp.PatchGridSpec.read(f, max_image_pixels=MAX_IMAGE_PIXELS, alpha_modes=ALPHA_MODES,
                                              max_id=MAX_ID, max_temporal=MAX_TEMPORAL))


def _published(image_token_id: int) -> dict[str, Any]:
    # Every published GLM-4.xV preprocessor_config.json: size 112*112 .. 9633792 pixels
    # (14*14*2*2*2*6144, smart_resize's default, not the classes' 28*28*15000), 14-pixel
    # patches merged 2x2, a temporal patch of 2, CLIP statistics.
    return Glm4vSpec(
        image_token_id=image_token_id, patch_size=14, merge_size=2, temporal_patch_size=2, min_pixels=112 * 112,
        max_pixels=9633792, image_mean=CLIP_MEAN, image_std=CLIP_STD,
    ).to_dict()


# <|image|> is 151343 in GLM-4.1V's vocabulary (GLM-4-0414's) and 151363 in GLM-4.5's,
# which GLM-4.5V and GLM-4.6V use (docs/families/glm4v.md: which values were verified).
PRESETS: dict[str, dict[str, Any]] = {
    "glm4_1v_9b_thinking": _published(151343),
    "glm4_5v": _published(151363),
    "glm4_6v": _published(151363),
}
