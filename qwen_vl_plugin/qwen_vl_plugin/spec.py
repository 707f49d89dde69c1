"""The ``qwen_vl`` spec: its fields, their validation, and the shipped presets.

A spec is ``{"family": "qwen_vl", **fields}``; the factory receives the fields without
``"family"``. Every field is checked and every failure is a :class:`SpecError` that
names the field; unknown fields are errors too, so a typo can never silently fall back
to a default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework.errors import SpecError

FAMILY = "qwen_vl"

# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD: the Qwen2-VL and Qwen2.5-VL image statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)

# backend -> (mm_framework resize reference, normalize rounding). "pil" clones
# transformers' Qwen2VLImageProcessorPil, "torchvision" its Qwen2VLImageProcessor.
BACKENDS: dict[str, tuple[str, str]] = {
    "pil": ("pil_bicubic", "pil"),
    "torchvision": ("aten_u8", "fused"),
}
ALPHA_MODES = ("composite", "drop")

REQUIRED = (
    "image_token_id",
    "patch_size",
    "merge_size",
    "temporal_patch_size",
    "min_pixels",
    "max_pixels",
    "image_mean",
    "image_std",
)
DEFAULTS: dict[str, Any] = {"backend": "pil", "alpha": "composite", "exif_transpose": False}
FIELDS = REQUIRED + tuple(DEFAULTS)


def _where(name: str) -> str:
    return f"qwen_vl spec: field {name!r}"


def _int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"{_where(name)} must be an integer, got {value!r}")
    if value < minimum:
        raise SpecError(f"{_where(name)} must be >= {minimum}, got {value}")
    if value >= 1 << 63:
        raise SpecError(f"{_where(name)} must fit in int64, got {value}")
    return value


def _triple(name: str, value: Any, *, nonzero: bool) -> tuple[float, float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise SpecError(f"{_where(name)} must be a list of 3 numbers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise SpecError(f"{_where(name)} must hold 3 finite numbers, got {value!r}")
        if nonzero and v == 0:
            # transformers would divide by zero and emit inf/nan features; refuse instead.
            raise SpecError(f"{_where(name)} must not contain 0, got {value!r}")
        out.append(float(v))
    return (out[0], out[1], out[2])


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise SpecError(f"{_where(name)} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{_where(name)} must be true or false, got {value!r}")
    return value


@attrs.frozen
class QwenVlSpec:
    """A validated ``qwen_vl`` spec. Build it with :func:`parse_spec`."""

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
        d["image_mean"] = list(self.image_mean)
        d["image_std"] = list(self.image_std)
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> QwenVlSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`QwenVlSpec`."""
    if not isinstance(params, Mapping):
        raise SpecError(f"qwen_vl spec: expected an object, got {type(params).__name__}")
    for key in params:
        if key not in FIELDS:
            raise SpecError(f"qwen_vl spec: unknown field {key!r}; known fields: {', '.join(FIELDS)}")
    for key in REQUIRED:
        if key not in params:
            raise SpecError(f"qwen_vl spec: missing required field {key!r}")
    p = {**DEFAULTS, **params}
    return QwenVlSpec(
        image_token_id=_int("image_token_id", p["image_token_id"], 0),
        patch_size=_int("patch_size", p["patch_size"], 1),
        merge_size=_int("merge_size", p["merge_size"], 1),
        temporal_patch_size=_int("temporal_patch_size", p["temporal_patch_size"], 1),
        # transformers refuses a zero (falsy) shortest_edge/longest_edge at call time.
        min_pixels=_int("min_pixels", p["min_pixels"], 1),
        max_pixels=_int("max_pixels", p["max_pixels"], 1),
        image_mean=_triple("image_mean", p["image_mean"], nonzero=False),
        image_std=_triple("image_std", p["image_std"], nonzero=True),
        backend=_choice("backend", p["backend"], tuple(BACKENDS)),
        alpha=_choice("alpha", p["alpha"], ALPHA_MODES),
        exif_transpose=_bool("exif_transpose", p["exif_transpose"]),
    )


def _preset(image_token_id: int, patch_size: int, min_pixels: int, max_pixels: int, mean, std) -> dict[str, Any]:
    return QwenVlSpec(
        image_token_id=image_token_id,
        patch_size=patch_size,
        merge_size=2,
        temporal_patch_size=2,
        min_pixels=min_pixels,
        max_pixels=max_pixels,
        image_mean=mean,
        image_std=std,
    ).to_dict()


# qwen2_vl: the transformers class defaults. qwen2_5_vl: the published Qwen2-VL and
# Qwen2.5-VL *-Instruct preprocessor_config.json (max 16384 merged 28x28 blocks).
# qwen3_vl / qwen3_5: the published Qwen3-VL and Qwen3.5 preprocessor configs; Qwen3.5
# has its own vocabulary, where <|image_pad|> is 248056.
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2_vl": _preset(151655, 14, 56 * 56, 28 * 28 * 1280, CLIP_MEAN, CLIP_STD),
    "qwen2_5_vl": _preset(151655, 14, 56 * 56, 14 * 14 * 4 * 16384, CLIP_MEAN, CLIP_STD),
    "qwen3_vl": _preset(151655, 16, 65536, 16777216, HALF, HALF),
    "qwen3_5": _preset(248056, 16, 65536, 16777216, HALF, HALF),
}
