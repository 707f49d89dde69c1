"""Resolve a ``qwen_vl`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key either feeds a spec
field, is pinned to the one value implemented exactly, or is known to be inert; any
other key or value is a :class:`SpecError` naming it. Missing keys take the
transformers 5.24 class defaults of ``Qwen2VLImageProcessor(Pil)``, exactly as
``from_pretrained`` would.

The resolved spec uses ``backend="pil"`` (transformers' ``Qwen2VLImageProcessorPil``)
whatever ``image_processor_type`` says: ``AutoImageProcessor`` itself picks PIL or
torchvision by what is installed, so the config does not pin a backend, and the PIL one
is the deterministic reference. Decoding follows transformers' PIL-object entry (alpha
composited on white, no EXIF transpose).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import SpecError

from .spec import CLIP_MEAN, CLIP_STD, QwenVlSpec, parse_spec

# model_type -> the config class's default image_token_id (used when config.json omits it).
MODEL_TYPES: dict[str, int] = {
    "qwen2_vl": 151655,
    "qwen2_5_vl": 151655,
    "qwen3_vl": 151655,
    "qwen3_vl_moe": 151655,
    "qwen3_5": 248056,
    "qwen3_5_moe": 248056,
}

IMAGE_PROCESSOR_TYPES = frozenset({"Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast", "Qwen2VLImageProcessorPil"})
PROCESSOR_CLASSES = frozenset({"Qwen2VLProcessor", "Qwen2_5_VLProcessor", "Qwen3VLProcessor"})

# Keys pinned to the single value implemented (PILImageResampling.BICUBIC is 3).
PINNED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
    "rescale_factor": 1 / 255,
    "resample": 3,
}
# transformers 5.24 Qwen2VLImageProcessor(Pil) class defaults.
CLASS_DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "image_mean": list(CLIP_MEAN),
    "image_std": list(CLIP_STD),
    "size": {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280},
}
# vision_config key -> spec field: the model's own geometry must agree with the processor's.
VISION_KEYS = {"patch_size": "patch_size", "spatial_merge_size": "merge_size", "temporal_patch_size": "temporal_patch_size"}


def _err(key: str, message: str) -> SpecError:
    return SpecError(f"preprocessor_config.json: {key!r} {message}")


def _same(value: Any, pinned: Any) -> bool:
    # bool is an int in Python: keep true/1 and false/0 apart.
    return type(value) is type(pinned) and value == pinned


def _pixels(pp: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(min_pixels, max_pixels)`` the way ``Qwen2VLImageProcessor.__init__`` derives them."""
    size = pp.get("size", CLASS_DEFAULTS["size"])
    if not isinstance(size, Mapping):
        raise _err("size", f"must be an object, got {size!r}")
    size = dict(size)
    # Top-level min_pixels/max_pixels override the size dict and drop its legacy keys.
    if "min_pixels" in pp:
        size["shortest_edge"] = pp["min_pixels"]
        size.pop("min_pixels", None)
    if "max_pixels" in pp:
        size["longest_edge"] = pp["max_pixels"]
        size.pop("max_pixels", None)
    if set(size) != {"shortest_edge", "longest_edge"}:
        raise _err("size", f"must resolve to exactly shortest_edge and longest_edge, got {sorted(size)}")
    return size["shortest_edge"], size["longest_edge"]


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Qwen-VL model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    model_type = config["model_type"]
    if not isinstance(preprocessor_config, Mapping):
        raise SpecError(f"preprocessor_config.json: expected an object, got {type(preprocessor_config).__name__}")
    pp = dict(preprocessor_config)
    known = set(PINNED) | set(CLASS_DEFAULTS) | {"min_pixels", "max_pixels", "image_processor_type", "processor_class"}
    for key in pp:
        if key not in known:
            raise _err(key, "is not supported by the qwen_vl family")
    for key, pinned in PINNED.items():
        if key in pp and not _same(pp[key], pinned):
            raise _err(key, f"must be {pinned!r} (the only value implemented), got {pp[key]!r}")
    ipt = pp.get("image_processor_type")
    if ipt is not None and ipt not in IMAGE_PROCESSOR_TYPES:
        raise _err("image_processor_type", f"must be one of {sorted(IMAGE_PROCESSOR_TYPES)}, got {ipt!r}")
    pc = pp.get("processor_class")
    if pc is not None and pc not in PROCESSOR_CLASSES:
        raise _err("processor_class", f"must be one of {sorted(PROCESSOR_CLASSES)}, got {pc!r}")
    min_pixels, max_pixels = _pixels(pp)
    fields = {
        "image_token_id": config.get("image_token_id", MODEL_TYPES[model_type]),
        "patch_size": pp.get("patch_size", CLASS_DEFAULTS["patch_size"]),
        "merge_size": pp.get("merge_size", CLASS_DEFAULTS["merge_size"]),
        "temporal_patch_size": pp.get("temporal_patch_size", CLASS_DEFAULTS["temporal_patch_size"]),
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
        "image_mean": pp.get("image_mean", CLASS_DEFAULTS["image_mean"]),
        "image_std": pp.get("image_std", CLASS_DEFAULTS["image_std"]),
    }
    spec = parse_spec(fields)
    _check_vision_config(config, spec)
    return spec.to_dict()


def _check_vision_config(config: Mapping[str, Any], spec: QwenVlSpec) -> None:
    vision = config.get("vision_config")
    if vision is None:
        return
    if not isinstance(vision, Mapping):
        raise SpecError(f"config.json: 'vision_config' must be an object, got {vision!r}")
    for key, field in VISION_KEYS.items():
        if key in vision and vision[key] != getattr(spec, field):
            raise SpecError(
                f"config.json: vision_config.{key}={vision[key]!r} disagrees with the preprocessor's "
                f"{field}={getattr(spec, field)!r}"
            )
