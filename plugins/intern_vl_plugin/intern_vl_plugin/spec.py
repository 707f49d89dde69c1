"""The ``intern_vl`` spec: its fields, their validation, and the shipped preset.

A spec is ``{"family": "intern_vl", **fields}``; the factory receives the fields without
``"family"``. Every field is checked and every failure is a :class:`SpecError` naming the
field; unknown fields are errors too, so a typo never silently falls back to a default.

The token ids come from the model's tokenizer, not from ``config.json``, which is why this
plugin does not implement ``mm_spec_from_hf_configs``: a spec needs the tokenizer's ids
for ``<img>``, ``</img>`` and ``<IMG_CONTEXT>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

import mm_framework as mmf

FAMILY = "intern_vl"

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

INT64_MAX = (1 << 63) - 1
# Released InternVL models use at most 40 tiles. The bound keeps a typo from building
# a candidate list of ~max_num * ln(max_num) grids (seconds, gigabytes) at pipeline
# construction, or features of thousands of tiles per image.
MAX_NUM_LIMIT = 1024

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
DEFAULTS: dict[str, Any] = {"use_thumbnail": True}
FIELDS = REQUIRED + tuple(DEFAULTS)


def _where(name: str) -> str:
    return f"intern_vl spec: field {name!r}"


def _int(name: str, value: Any, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise mmf.SpecError(f"{_where(name)} must be an integer, got {value!r}")
    if value < minimum:
        raise mmf.SpecError(f"{_where(name)} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise mmf.SpecError(f"{_where(name)} must be <= {maximum}, got {value}")
    if value > INT64_MAX:
        raise mmf.SpecError(f"{_where(name)} must fit in int64, got {value}")
    return value


def _triple(name: str, value: Any, *, nonzero: bool) -> tuple[float, float, float]:
    """Three numbers that stay finite (and, for ``nonzero``, non-zero) as float32.

    The pipeline computes in float32, so ``1e300`` (inf) or ``1e-50`` (0) are refused
    here rather than turning every feature into inf or nan.
    """
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise mmf.SpecError(f"{_where(name)} must be a list of 3 numbers, got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise mmf.SpecError(f"{_where(name)} must hold 3 finite numbers, got {value!r}")
        try:
            f = float(v)
        except OverflowError:  # an int beyond float range
            f = math.inf
        if not math.isfinite(f):
            raise mmf.SpecError(f"{_where(name)} must hold 3 finite numbers, got {value!r}")
        with np.errstate(over="ignore"):
            as_f32 = float(np.float32(f))
        if not math.isfinite(as_f32):
            raise mmf.SpecError(f"{_where(name)} must hold numbers within float32 range, got {value!r}")
        if nonzero and as_f32 == 0.0:
            raise mmf.SpecError(f"{_where(name)} must not contain 0 (as float32), got {value!r}")
        out.append(f)
    return (out[0], out[1], out[2])


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise mmf.SpecError(f"{_where(name)} must be true or false, got {value!r}")
    return value


@attrs.frozen
class InternVlSpec:
    """A validated ``intern_vl`` spec. Build it with :func:`parse_spec`.

    ``image_token_id`` is the one-token slot per image in the tokenized prompt (SGLang
    uses ``<IMG_CONTEXT>`` itself); each slot becomes ``<img>``, ``num_image_token``
    context tokens per tile, ``</img>``.
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

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        d = attrs.asdict(self)
        d["image_mean"] = list(self.image_mean)
        d["image_std"] = list(self.image_std)
        return {"family": FAMILY, **d}


def parse_spec(params: Mapping[str, Any]) -> InternVlSpec:
    """Validate the spec fields (without ``"family"``) into an :class:`InternVlSpec`."""
    if not isinstance(params, Mapping):
        raise mmf.SpecError(f"intern_vl spec: expected an object, got {type(params).__name__}")
    for key in params:
        if key not in FIELDS:
            raise mmf.SpecError(f"intern_vl spec: unknown field {key!r}; known fields: {', '.join(FIELDS)}")
    for key in REQUIRED:
        if key not in params:
            raise mmf.SpecError(f"intern_vl spec: missing required field {key!r}")
    p = {**DEFAULTS, **params}
    return InternVlSpec(
        image_token_id=_int("image_token_id", p["image_token_id"], 0),
        img_context_token_id=_int("img_context_token_id", p["img_context_token_id"], 0),
        img_start_token_id=_int("img_start_token_id", p["img_start_token_id"], 0),
        img_end_token_id=_int("img_end_token_id", p["img_end_token_id"], 0),
        image_size=_int("image_size", p["image_size"], 1),
        num_image_token=_int("num_image_token", p["num_image_token"], 1),
        max_num=_int("max_num", p["max_num"], 1, MAX_NUM_LIMIT),
        image_mean=_triple("image_mean", p["image_mean"], nonzero=False),
        image_std=_triple("image_std", p["image_std"], nonzero=True),
        use_thumbnail=_bool("use_thumbnail", p["use_thumbnail"]),
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
