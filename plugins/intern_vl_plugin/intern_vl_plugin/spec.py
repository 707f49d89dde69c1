"""The ``intern_vl`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "intern_vl", **fields}``; the factory receives the fields without
``"family"``. Every field is checked and every failure is a :class:`SpecError` naming the
field; unknown fields are errors too, so a typo never silently falls back to a default.

``processor`` names the reference cloned: ``"sglang"`` (the default; SGLang's
``InternVLImageProcessor``) or ``"transformers"`` (the ``InternVLProcessor`` of the ``-hf``
checkpoints with ``GotOcr2ImageProcessorPil``, or with ``backend: "torchvision"`` its
torchvision ``GotOcr2ImageProcessor``). A model directory of an ``-hf`` checkpoint resolves to
the second (:mod:`.hf_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework import Limits
from mm_framework.plugin import SpecFields

FAMILY = "intern_vl"

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# Released InternVL models use at most 40 tiles. The bound keeps a typo from building
# a candidate list of ~max_num * ln(max_num) grids (seconds, gigabytes) at pipeline
# construction, or features of thousands of tiles per image.
MAX_NUM_LIMIT = 1024
# The largest image the core decodes by default (Pillow's decompression-bomb bound). The
# tile canvas of max_num tiles may not exceed it: a larger canvas is an allocation no
# decoded image could need (the feature is 12 bytes per canvas pixel).
MAX_CANVAS_PIXELS = Limits().max_image_pixels
MARKERS = ("img_context_token_id", "img_start_token_id", "img_end_token_id")

REQUIRED = (
    "image_token_id",
    "img_context_token_id",
    "img_start_token_id",
    "img_end_token_id",
    "image_size",
    "num_image_token",
    "max_num",
    "image_mean",
    "image_std",
)
PROCESSORS = ("sglang", "transformers")
# transformers' image backend -> (mm_framework resize reference, normalize rounding):
# GotOcr2ImageProcessorPil, or GotOcr2ImageProcessor (uint8 tvF.resize, fused normalize).
BACKENDS: dict[str, tuple[str, str]] = {"pil": ("pil_bicubic", "pil"), "torchvision": ("aten_u8", "fused")}
DEFAULTS: dict[str, Any] = {"use_thumbnail": True, "processor": "sglang", "backend": "pil"}


@attrs.frozen
class InternVlSpec:
    """A validated ``intern_vl`` spec. Build it with :func:`parse_spec`.

    ``image_token_id`` is the one-token slot per image in the tokenized prompt (SGLang
    and transformers use ``<IMG_CONTEXT>`` itself); each slot becomes ``<img>``,
    ``num_image_token`` context tokens per tile, ``</img>``. ``processor``: which reference's
    tile rule, resize and arithmetic (docs/families/intern_vl.md); ``backend``: with
    ``"transformers"``, which of its image processors (SGLang's has one).
    """

    image_token_id: int
    img_context_token_id: int
    img_start_token_id: int
    img_end_token_id: int
    image_size: int
    num_image_token: int
    max_num: int
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    use_thumbnail: bool = True
    processor: str = "sglang"
    backend: str = "pil"

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        d["image_mean"] = list(self.image_mean)
        d["image_std"] = list(self.image_std)
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> InternVlSpec:
    """Validate the spec fields (without ``"family"``) into an :class:`InternVlSpec`."""
    f = SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    spec = InternVlSpec(
        image_token_id=f.integer("image_token_id", minimum=0),
        img_context_token_id=f.integer("img_context_token_id", minimum=0),
        img_start_token_id=f.integer("img_start_token_id", minimum=0),
        img_end_token_id=f.integer("img_end_token_id", minimum=0),
        image_size=f.integer("image_size", minimum=1),
        num_image_token=f.integer("num_image_token", minimum=1),
        max_num=f.integer("max_num", minimum=1, maximum=MAX_NUM_LIMIT),
        image_mean=f.floats("image_mean"),
        image_std=f.floats("image_std", nonzero=True),
        use_thumbnail=f.boolean("use_thumbnail"),
        processor=f.choice("processor", PROCESSORS),
        backend=f.choice("backend", BACKENDS),
    )
    _cross_check(f, spec)
    return spec


def _cross_check(f: SpecFields, s: InternVlSpec) -> None:
    """The rules between fields (docs/families/intern_vl.md, "Spec")."""
    # The model scatters features where the ids equal <IMG_CONTEXT>, so a marker sharing its
    # id would count as one more feature slot per image; <img> and </img> are distinct
    # tokens in every InternVL vocabulary, and equal ids would hide where an image ends.
    seen: dict[int, str] = {}
    for name in MARKERS:
        value = getattr(s, name)
        if value in seen:
            raise f.error(name, f"must differ from {seen[value]}, both are {value}")
        seen[value] = name
    if s.num_image_token > s.image_size**2:
        # (image_size // patch)**2 * downsample**2 tokens per tile: at most one per pixel;
        # more would only multiply the prompt's context run.
        raise f.error(
            "num_image_token",
            f"must not exceed image_size**2 = {s.image_size**2} (at most one token per tile pixel), "
            f"got {s.num_image_token}",
        )
    if s.processor == "transformers" and not s.use_thumbnail:
        # GotOcr2ImageProcessor.crop_image_to_patches always appends the thumbnail.
        raise f.error("use_thumbnail", "must be true with processor 'transformers' (it always adds the thumbnail)")
    if s.backend != "pil" and s.processor != "transformers":
        # SGLang's processor has one arithmetic (torch float); the choice is transformers'.
        raise f.error("backend", f"={s.backend!r} needs processor 'transformers' (got {s.processor!r})")
    canvas = s.max_num * s.image_size**2
    if canvas > MAX_CANVAS_PIXELS:
        raise f.error(
            "max_num",
            f"tiles of image_size {s.image_size}x{s.image_size} make a canvas of up to {canvas} pixels, above the "
            f"{MAX_CANVAS_PIXELS} the core decodes by default",
        )


# InternVL2.5-8B and -26B: the InternLM2.5 tokenizer's added tokens <img> 92544,
# </img> 92545, <IMG_CONTEXT> 92546 (the prompt slot, as in SGLang). 448-pixel tiles,
# (448 // 14)^2 * 0.5^2 = 256 tokens per tile, SGLang's hard-coded budget of 12 tiles,
# ImageNet statistics. The Qwen2.5-based sizes (1B, 4B, 38B, 78B) share every value but
# the three token ids, which come from their own tokenizer.
PRESETS: dict[str, dict[str, Any]] = {
    "internvl2_5_8b": InternVlSpec(
        image_token_id=92546,
        img_context_token_id=92546,
        img_start_token_id=92544,
        img_end_token_id=92545,
        image_size=448,
        num_image_token=256,
        max_num=12,
        image_mean=IMAGENET_MEAN,
        image_std=IMAGENET_STD,
    ).to_dict(),
}
