"""The ``pixtral`` spec: its fields, their validation, and the shipped presets.

A spec is ``{"family": "pixtral", **fields}``; the factory receives the fields without
``"family"``. Every field is read through ``mmp.SpecFields`` (unknown and missing fields,
types and ranges), then the rules that span fields are checked; every failure is a
``SpecError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import plugin as mmp

FAMILY = "pixtral"

# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD, the statistics of every published Pixtral / Mistral 3
# checkpoint.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
ALPHA_MODES = ("composite", "drop")
# "f32": the normalized planes; "u8": the resized image's own values, what the processor returns
# with do_rescale and do_normalize off (vLLM's mm_device_do_normalize normalizes on the GPU).
PIXELS = ("f32", "u8")
# backend -> (mm_framework resize reference, normalize rounding). "pil" clones
# transformers' PixtralImageProcessorPil, "torchvision" its PixtralImageProcessor
# (ATen's uint8 antialiased bicubic, then rescale fused into normalize in float32).
BACKENDS: dict[str, tuple[str, str]] = {
    "pil": ("pil_bicubic", "pil"),
    "torchvision": ("aten_u8", "fused"),
}

# Pillow refuses images wider or taller than this; a larger longest_edge could never be
# reached by a decodable image and would only hide a typo.
MAX_EDGE = 1 << 16
# The largest image the core decodes by default (Pillow's decompression-bomb bound). Every
# image is stretched to whole tokens of patch_size * spatial_merge_size pixels a side, so
# a token above it would turn even a 1x1 image into an allocation no decoded image needs.
MAX_IMAGE_PIXELS = mmf.Limits().max_image_pixels

REQUIRED = (
    "image_token_id",
    "image_break_token_id",
    "image_end_token_id",
    "patch_size",
    "spatial_merge_size",
    "longest_edge",
    "image_mean",
    "image_std",
)
DEFAULTS: dict[str, Any] = {"backend": "pil", "alpha": "composite", "exif_transpose": False, "pixels": "f32"}
TOKEN_FIELDS = REQUIRED[:3]


@attrs.frozen
class PixtralSpec:
    """A validated ``pixtral`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    image_break_token_id: int
    image_end_token_id: int
    patch_size: int
    spatial_merge_size: int
    longest_edge: int
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    backend: str = "pil"
    alpha: str = "composite"
    exif_transpose: bool = False
    pixels: str = "f32"

    @property
    def factor(self) -> int:
        """Side multiple of the resized image and the side of one ``[IMG]`` token."""
        return self.patch_size * self.spatial_merge_size

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        d["image_mean"] = list(self.image_mean)
        d["image_std"] = list(self.image_std)
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> PixtralSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`PixtralSpec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    # Token ids are int32 in the Mistral vocabularies (131072 entries).
    ids = {name: f.integer(name, minimum=0, maximum=2**31 - 1) for name in TOKEN_FIELDS}
    spec = PixtralSpec(
        **ids,
        patch_size=f.integer("patch_size", minimum=1, maximum=MAX_EDGE),
        spatial_merge_size=f.integer("spatial_merge_size", minimum=1, maximum=MAX_EDGE),
        longest_edge=f.integer("longest_edge", minimum=1, maximum=MAX_EDGE),
        image_mean=f.floats("image_mean"),
        # transformers would divide by zero and emit inf/nan features; refuse instead.
        image_std=f.floats("image_std", nonzero=True),
        backend=f.choice("backend", BACKENDS),
        alpha=f.choice("alpha", ALPHA_MODES),
        exif_transpose=f.boolean("exif_transpose"),
        pixels=f.choice("pixels", PIXELS),
    )
    # The layout tells an image's tokens apart by id: the three must differ.
    seen: dict[int, str] = {}
    for name, value in ids.items():
        if value in seen:
            raise f.error(name, f"must differ from {seen[value]!r}, both are {value}")
        seen[value] = name
    if spec.factor**2 > MAX_IMAGE_PIXELS:
        raise f.error(
            "spatial_merge_size",
            f"times patch_size is {spec.factor}: one {spec.factor}x{spec.factor} token, the smallest image, exceeds "
            f"the {MAX_IMAGE_PIXELS} pixels the core decodes by default",
        )
    if spec.longest_edge < spec.factor:
        # Sides are rounded up to whole tokens after the fit, so every image would come out
        # longer than longest_edge (docs/families/pixtral.md §1).
        raise f.error(
            "longest_edge",
            f"must be at least patch_size * spatial_merge_size = {spec.factor} (one token), got {spec.longest_edge}",
        )
    return spec


def _preset(patch_size: int, spatial_merge_size: int, longest_edge: int) -> dict[str, Any]:
    return PixtralSpec(
        image_token_id=10,
        image_break_token_id=12,
        image_end_token_id=13,
        patch_size=patch_size,
        spatial_merge_size=spatial_merge_size,
        longest_edge=longest_edge,
        image_mean=CLIP_MEAN,
        image_std=CLIP_STD,
    ).to_dict()


# Each equals the published checkpoint's preprocessor_config.json + processor_config.json
# + config.json (docs/families/pixtral.md §8): [IMG] 10, [IMG_BREAK] 12, [IMG_END] 13.
PRESETS: dict[str, dict[str, Any]] = {
    # mistral-community/pixtral-12b: 16-pixel patches, no merge, longest edge 1024.
    "pixtral_12b": _preset(16, 1, 1024),
    # mistralai/Mistral-Small-3.1-24B-Instruct-2503 (Mistral 3): 14-pixel patches merged
    # 2x2, longest edge 1540.
    "mistral_small_3_1": _preset(14, 2, 1540),
}
