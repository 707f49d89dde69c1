"""The ``llava_onevision`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "llava_onevision", **fields}``; the factory receives the fields
without ``"family"``. Every field is read through :class:`mmp.SpecFields` (unknown and
missing fields, types, ranges) and then checked against the others; every failure is a
``SpecError`` naming the field. The values transformers would accept but this family
does not clone exactly are refused, not approximated (docs/families/llava_onevision.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import plugin as mmp

FAMILY = "llava_onevision"

# The Pillow filters transformers' PIL backend uses, by mm_framework resizer name.
RESAMPLERS = ("pil_bicubic", "pil_lanczos")
# "pil" clones transformers' LlavaOnevisionImageProcessorPil, "torchvision" its
# LlavaOnevisionImageProcessor: (backend, resample) -> the mm_framework resizer of its
# resizes. The torchvision bicubic is ATen's uint8 antialiased one; its Lanczos (CPU,
# torchvision >= 0.27) is not cloned.
BACKENDS = ("pil", "torchvision")
RESIZERS = {
    ("pil", "pil_bicubic"): "pil_bicubic",
    ("pil", "pil_lanczos"): "pil_lanczos",
    ("torchvision", "pil_bicubic"): "aten_u8",
}
STRATEGIES = ("full", "default")
ALPHA_MODES = ("composite", "drop")
# transformers reads the cap as int(value.strip("anyres_max_")); only the canonical
# spelling is accepted, so the spec and the number it means cannot disagree.
ASPECT_RATIO = re.compile(r"anyres_max_([1-9][0-9]{0,5})")

REQUIRED = (
    "image_token_id",
    "image_size",
    "image_grid_pinpoints",
    "image_mean",
    "image_std",
    "rescale_factor",
    "resample",
    "num_image_tokens",
    "vision_feature_select_strategy",
    "vision_aspect_ratio",
)
DEFAULTS: dict[str, Any] = {"backend": "pil", "alpha": "composite", "exif_transpose": False}

# A pinpoint is the canvas an image is resized and padded to; it may not exceed the
# largest decoded image a pipeline accepts by default, so a spec cannot ask for a
# canvas (and crop stack) beyond what the limits already allow per item.
MAX_PINPOINT_PIXELS = mmf.Limits().max_image_pixels


@attrs.frozen
class LlavaOnevisionSpec:
    """A validated ``llava_onevision`` spec. Build it with :func:`parse_spec`."""

    image_token_id: int
    image_size: int
    image_grid_pinpoints: tuple[tuple[int, int], ...]
    image_mean: tuple[float, float, float]
    image_std: tuple[float, float, float]
    rescale_factor: float
    resample: str
    num_image_tokens: int
    vision_feature_select_strategy: str
    vision_aspect_ratio: str
    backend: str = "pil"
    alpha: str = "composite"
    exif_transpose: bool = False

    @property
    def resizer(self) -> str:
        """The mm_framework resizer of the backend's resizes (``resize_rgb``'s ``resample``)."""
        return RESIZERS[self.backend, self.resample]

    @property
    def max_num_patches(self) -> int:
        """The ``N`` of ``anyres_max_N``: the cap on unpadded features, in base images."""
        return int(ASPECT_RATIO.fullmatch(self.vision_aspect_ratio).group(1))

    @property
    def patches_per_side(self) -> int:
        """Feature rows (and columns) of one crop: ``sqrt(num_image_tokens)``."""
        return math.isqrt(self.num_image_tokens)

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        d["image_grid_pinpoints"] = [list(p) for p in self.image_grid_pinpoints]
        d["image_mean"] = list(self.image_mean)
        d["image_std"] = list(self.image_std)
        return {"family": FAMILY, **d}


def _pinpoints(f: mmp.SpecFields, raw: Any, size: int) -> tuple[tuple[int, int], ...]:
    name = "image_grid_pinpoints"
    if not isinstance(raw, (list, tuple)) or not raw:
        raise f.error(name, f"must be a non-empty list of [height, width] pairs, got {raw!r}")
    out = []
    for k, pair in enumerate(raw):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise f.error(name, f"entry {k} must be a [height, width] pair, got {pair!r}")
        inner = mmp.SpecFields.arguments(height=pair[0], width=pair[1])
        try:
            h = inner.integer("height", minimum=1)
            w = inner.integer("width", minimum=1)
        except mmp.SpecError as e:
            raise f.error(name, f"entry {k}: {e}") from None
        if h % size or w % size:
            # transformers would cut smaller edge crops and stretch them to the crop size;
            # that path is not cloned.
            raise f.error(name, f"entry {k} {[h, w]} must be multiples of image_size {size}")
        if h * w > MAX_PINPOINT_PIXELS:
            raise f.error(name, f"entry {k} {[h, w]} exceeds {MAX_PINPOINT_PIXELS} pixels")
        out.append((h, w))
    return tuple(out)


def parse_spec(params: Mapping[str, Any]) -> LlavaOnevisionSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`LlavaOnevisionSpec`."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    size = f.integer("image_size", minimum=1)
    tokens = f.integer("num_image_tokens", minimum=1)
    if math.isqrt(tokens) ** 2 != tokens:
        raise f.error("num_image_tokens", f"must be a perfect square (a square feature grid per crop), got {tokens}")
    if tokens > size * size:
        # num_image_tokens is (crop side // vision patch)**2: a patch is at least one pixel,
        # and a larger count would only multiply the prompt's placeholder run.
        raise f.error(
            "num_image_tokens",
            f"must not exceed image_size**2 = {size * size} (at most one feature per pixel of a crop), got {tokens}",
        )
    ratio = params["vision_aspect_ratio"]
    if not isinstance(ratio, str) or not ASPECT_RATIO.fullmatch(ratio):
        raise f.error("vision_aspect_ratio", f"must be 'anyres_max_<N>' with N >= 1, got {ratio!r}")
    spec = LlavaOnevisionSpec(
        image_token_id=f.integer("image_token_id", minimum=0, maximum=2**31 - 1),
        image_size=size,
        image_grid_pinpoints=_pinpoints(f, params["image_grid_pinpoints"], size),
        image_mean=f.floats("image_mean"),
        # transformers would divide by zero and emit inf/nan features; refuse instead.
        image_std=f.floats("image_std", nonzero=True),
        rescale_factor=f.number("rescale_factor", positive=True),
        resample=f.choice("resample", RESAMPLERS),
        num_image_tokens=tokens,
        vision_feature_select_strategy=f.choice("vision_feature_select_strategy", STRATEGIES),
        vision_aspect_ratio=ratio,
        backend=f.choice("backend", BACKENDS),
        alpha=f.choice("alpha", ALPHA_MODES),
        exif_transpose=f.boolean("exif_transpose"),
    )
    if (spec.backend, spec.resample) not in RESIZERS:
        raise f.error(
            "backend",
            f"{spec.backend!r} is implemented for resample 'pil_bicubic' only (its ATen bicubic), got resample "
            f"{spec.resample!r}",
        )
    return spec


# The grid pinpoints of llava-hf/llava-onevision-qwen2-*-ov-hf (LlavaOnevisionConfig's
# default too): every [h, w] with h, w in 384..2304 in steps of 384, height-major.
ONEVISION_PINPOINTS = tuple((h, w) for h in range(384, 2305, 384) for w in range(384, 2305, 384))

# llava-hf/llava-onevision-qwen2-7b-ov-hf (and its 0.5b / 72b siblings, which share the
# processor files and the Qwen2 token ids): SigLIP-so400m at 384 px, 27x27 features per
# crop, <image> = 151646 (docs/families/llava_onevision.md, section 1).
PRESETS: dict[str, dict[str, Any]] = {
    "llava_onevision_qwen2_7b_ov": LlavaOnevisionSpec(
        image_token_id=151646,
        image_size=384,
        image_grid_pinpoints=ONEVISION_PINPOINTS,
        image_mean=(0.5, 0.5, 0.5),
        image_std=(0.5, 0.5, 0.5),
        rescale_factor=1 / 255,
        resample="pil_bicubic",
        num_image_tokens=729,
        vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9",
    ).to_dict(),
}
