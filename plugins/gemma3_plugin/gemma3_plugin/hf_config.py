"""Resolve a ``gemma3`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, or is refused by name. Missing keys take the
transformers 5.24 defaults ``from_pretrained`` would use: ``Gemma3ImageProcessorPil``'s
class attributes, and for the five keys ``Gemma3Processor`` overrides at call time
(``do_convert_rgb`` and the pan-and-scan options) the processor's values. Those five are
accepted only as ``null`` or equal to the processor's value, because the processor ignores
any other value in the file (docs/families/gemma3.md §1); pan-and-scan is a spec option.

Decoding follows transformers' PIL-object entry (alpha composited on white, no EXIF
transpose) and the tokenizer-only fields take the Gemma 3 tokenizer's values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import parse_spec

MODEL_TYPES = frozenset({"gemma3"})
IMAGE_PROCESSOR_TYPES = frozenset({"Gemma3ImageProcessor", "Gemma3ImageProcessorFast", "Gemma3ImageProcessorPil"})
PROCESSOR_CLASSES = frozenset({"Gemma3Processor"})
CLASS_NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": PROCESSOR_CLASSES}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# Keys pinned to the single value implemented.
PINNED: dict[str, Any] = {"do_resize": True, "default_to_square": True}
# Keys Gemma3Processor overrides with its own images defaults: null or exactly these.
PROCESSOR_OVERRIDES: dict[str, Any] = {
    "do_convert_rgb": True,
    "do_pan_and_scan": False,
    "pan_and_scan_min_crop_size": 256,
    "pan_and_scan_max_num_crops": 4,
    "pan_and_scan_min_ratio_to_activate": 1.2,
}
# Gemma3ImageProcessorPil class attributes (IMAGENET_STANDARD mean/std, 224x224, bilinear).
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"height": 224, "width": 224},
    "resample": 2,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}
# Gemma3Config defaults, under either spelling (transformers maps *_id to *_index).
MODEL_DEFAULTS = {"image_token_index": 262144, "boi_token_index": 255999, "eoi_token_index": 256000,
                  "mm_tokens_per_image": 256}
NAMES = {"image_token_index": "image_token_id", "boi_token_index": "boi_token_id", "eoi_token_index": "eoi_token_id"}
KNOWN = {*PINNED, *PROCESSOR_OVERRIDES, *CLASS_DEFAULTS, *CLASS_NAMES, "image_seq_length"}


def _size(keys: mmp.ConfigKeys) -> tuple[Any, Any]:
    size = keys.values.get("size", CLASS_DEFAULTS["size"])
    if not isinstance(size, Mapping) or set(size) != {"height", "width"}:
        raise keys.error("size", f"must be an object with exactly height and width, got {size!r}")
    return size["height"], size["width"]


def _model_value(config: Mapping[str, Any], key: str) -> Any:
    alias = NAMES.get(key)
    if key in config and alias in config and config[key] != config[alias]:
        raise mmp.SpecError(f"config.json: {key!r}={config[key]!r} and {alias!r}={config[alias]!r} disagree")
    return config.get(key, config.get(alias, MODEL_DEFAULTS[key])) if alias else config.get(key, MODEL_DEFAULTS[key])


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Gemma 3 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys("preprocessor_config.json", preprocessor_config, "gemma3", KNOWN)
    keys.pinned(PINNED)
    pp = keys.values
    for key, value in PROCESSOR_OVERRIDES.items():
        if pp.get(key) is not None and not keys.holds(key, value):
            raise keys.error(key, f"must be null or {value!r}: Gemma3Processor overrides it with {value!r}, "
                                  f"got {pp[key]!r}")
    keys.one_of(CLASS_NAMES, nullable=True)
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error(
            "resample", f"must be one of {sorted(RESAMPLE)} (Pillow LANCZOS, BILINEAR, BICUBIC), got {resample!r}"
        )
    tokens = _model_value(config, "mm_tokens_per_image")
    seq = pp.get("image_seq_length", tokens)
    if seq != tokens:
        raise keys.error("image_seq_length", f"={seq!r} disagrees with config.json mm_tokens_per_image={tokens!r}")
    height, width = _size(keys)
    fields = {
        **{NAMES[k]: _model_value(config, k) for k in NAMES},
        "image_seq_length": seq,
        "height": height,
        "width": width,
        "resample": RESAMPLE[resample],
        **{
            k: pp.get(k, CLASS_DEFAULTS[k])
            for k in ("do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std")
        },
    }
    spec = parse_spec(fields)
    _check_vision_config(config, spec.height, spec.width)
    return spec.to_dict()


def _check_vision_config(config: Mapping[str, Any], height: int, width: int) -> None:
    """The vision tower's square input size must be what the processor resizes to."""
    vision = config.get("vision_config")
    if vision is None:
        return
    if not isinstance(vision, Mapping):
        raise mmp.SpecError(f"config.json: 'vision_config' must be an object, got {vision!r}")
    side = vision.get("image_size")
    if side is not None and (height, width) != (side, side):
        raise mmp.SpecError(
            f"config.json: vision_config.image_size={side!r} disagrees with the preprocessor's size {height}x{width}"
        )
