"""Resolve a ``llama4`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented (or, for the inert keys the published file writes out,
``null``), names a class, or is refused by name. Missing keys take the transformers 5.24
defaults ``from_pretrained`` would use, ``Llama4ImageProcessor``'s class attributes.

The processor's token strings are the Llama 4 tokenizer's; their ids come from the published
vocabulary that ``config.json``'s ``image_token_index`` (the ``<|patch|>`` id the model
scatters features into) identifies, and its ``boi_token_index``/``eoi_token_index`` must
agree. ``patch_size``, ``pixel_shuffle_ratio`` and the tile side come from ``vision_config``
(``Llama4Processor``'s own defaults, 14 and 0.5, equal the published tower's).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY, PRESETS, TOKEN_FIELDS, parse_spec

MODEL_TYPES = frozenset({"llama4"})
IMAGE_PROCESSOR_TYPES = frozenset({"Llama4ImageProcessor", "Llama4ImageProcessorFast"})
CLASS_NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": frozenset({"Llama4Processor"})}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# do_resize=False is refused by the reference itself; the rest are BaseImageProcessor keys
# the published file writes out with these values, which Llama4ImageProcessor never reads
# differently (no center crop, channels-first torch tensors).
PINNED: dict[str, Any] = {
    "do_convert_rgb": True, "do_resize": True, "data_format": "channels_first", "default_to_square": True,
    "crop_size": None, "do_center_crop": None, "device": None, "input_data_format": None, "return_tensors": None,
}
# Llama4ImageProcessor's class attributes.
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"height": 336, "width": 336},
    "resample": 2,
    "max_patches": 16,
    "resize_to_max_canvas": False,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES}
# Llama4Config / Llama4VisionConfig defaults.
MODEL_DEFAULTS = {"image_token_index": 200092, "boi_token_index": 200080, "eoi_token_index": 200081}
VISION_DEFAULTS = {"image_size": 448, "patch_size": 14, "pixel_shuffle_ratio": 0.5}
# <|patch|> id -> the published tokenizer's ids of every token the processor writes.
TOKENIZERS = {PRESETS[p]["patch_token_id"]: {k: PRESETS[p][k] for k in TOKEN_FIELDS}
              for p in ("llama4_scout_17b_16e_instruct",)}


def _size(keys: mmp.ConfigKeys) -> int:
    value = keys.values.get("size", CLASS_DEFAULTS["size"])
    if not isinstance(value, Mapping) or set(value) != {"height", "width"} or value["height"] != value["width"]:
        raise keys.error("size", f"must be a square {{'height': s, 'width': s}} (the reference refuses any other), "
                                 f"got {value!r}")
    return value["height"]


def _tokens(config: Mapping[str, Any]) -> dict[str, int]:
    patch = config.get("image_token_index", MODEL_DEFAULTS["image_token_index"])
    tokens = TOKENIZERS.get(patch) if isinstance(patch, int) and not isinstance(patch, bool) else None
    if tokens is None:
        raise mmp.SpecError(
            f"config.json: 'image_token_index'={patch!r} is not the <|patch|> id of a published vocabulary "
            f"({', '.join(map(str, sorted(TOKENIZERS)))}) whose marker ids the llama4 family knows; "
            "write the spec with the tokenizer's ids by hand")
    for key, field in (("boi_token_index", "image_start_token_id"), ("eoi_token_index", "image_end_token_id")):
        value = config.get(key, MODEL_DEFAULTS[key])
        if value != tokens[field]:
            raise mmp.SpecError(f"config.json: '{key}'={value!r} disagrees with the vocabulary of image_token_index="
                                f"{patch} ({field} {tokens[field]})")
    return tokens


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Llama 4 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (LANCZOS, BILINEAR, BICUBIC), got "
                                     f"{resample!r}")
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    tile = _size(keys)
    side = vision.get("image_size", VISION_DEFAULTS["image_size"])
    if side != tile:
        raise keys.error("size", f"={{'height': {tile!r}, 'width': {tile!r}}} disagrees with config.json "
                                 f"vision_config.image_size={side!r} (the tower's input is one tile)")
    fields = {
        **_tokens(config),
        "tile_size": tile,
        "patch_size": vision.get("patch_size", VISION_DEFAULTS["patch_size"]),
        "pixel_shuffle_ratio": vision.get("pixel_shuffle_ratio", VISION_DEFAULTS["pixel_shuffle_ratio"]),
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("max_patches", "resize_to_max_canvas", "do_rescale",
                                                     "rescale_factor", "do_normalize", "image_mean", "image_std")},
    }
    return parse_spec(fields).to_dict()
