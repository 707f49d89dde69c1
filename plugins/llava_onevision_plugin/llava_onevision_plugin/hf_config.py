"""Resolve a ``llava_onevision`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key either feeds a spec
field, is pinned to the one value implemented exactly, or is known to be inert; any
other key or value is a ``SpecError`` naming it. Missing keys take transformers 5.24's
class defaults (``LlavaOnevisionImageProcessorPil``, ``LlavaOnevisionConfig``), as
``from_pretrained`` would.

The processor's own settings (``processor_config.json``) are not among the two files;
each follows from ``config.json``, which carries the same values for the published
checkpoints: ``num_image_tokens`` is ``(vision_config.image_size //
vision_config.patch_size) ** 2`` (the vision tower's features per crop),
``vision_feature_select_strategy`` and ``vision_aspect_ratio`` are config keys, and the
``<image>`` id is ``image_token_index``. The spec uses ``backend="pil"`` whatever
``image_processor_type`` names (the backend is chosen by what is installed, not by the
config; the torchvision class has the same defaults, and ``"backend": "torchvision"``
mirrors it), with transformers' PIL-object decoding (alpha composited, no EXIF transpose).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .spec import FAMILY, ONEVISION_PINPOINTS, parse_spec

MODEL_TYPE = "llava_onevision"
IMAGE_PROCESSOR_TYPES = frozenset(
    {"LlavaOnevisionImageProcessor", "LlavaOnevisionImageProcessorFast", "LlavaOnevisionImageProcessorPil"}
)
PROCESSOR_CLASSES = frozenset({"LlavaOnevisionProcessor"})
NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": PROCESSOR_CLASSES}
# PILImageResampling value -> mm_framework resizer.
RESAMPLE = {3: "pil_bicubic", 1: "pil_lanczos"}

# Keys pinned to the single value implemented.
PINNED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
    # Batches of images are zero-padded to the same patch count (the model kwargs do it).
    "do_pad": True,
}
# Keys that must be absent or null: transformers would center-crop or cut other crops.
NULL_ONLY = ("crop_size", "do_center_crop")
# transformers 5.24 LlavaOnevisionImageProcessorPil class defaults (OPENAI_CLIP statistics).
CLASS_DEFAULTS: dict[str, Any] = {
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "rescale_factor": 1 / 255,
    "resample": 3,
    "size": {"height": 384, "width": 384},
    "image_grid_pinpoints": [list(p) for p in ONEVISION_PINPOINTS],
}
# LlavaOnevisionConfig defaults (its SigLIP vision sub-config included).
CONFIG_DEFAULTS: dict[str, Any] = {
    "image_token_index": 151646,
    "vision_feature_select_strategy": "full",
    "vision_aspect_ratio": "anyres_max_9",
}
VISION_DEFAULTS = {"image_size": 384, "patch_size": 14}


def _image_size(keys: mmp.ConfigKeys) -> Any:
    size = keys.values.get("size", CLASS_DEFAULTS["size"])
    if not isinstance(size, Mapping) or set(size) != {"height", "width"}:
        raise keys.error("size", f"must be {{'height': S, 'width': S}}, got {size!r}")
    if size["height"] != size["width"]:
        raise keys.error("size", f"must be square (the crops are square), got {dict(size)!r}")
    return size["height"]


def _resample(keys: mmp.ConfigKeys) -> str:
    value = keys.values.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(value, bool) or value not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (bicubic, Lanczos), got {value!r}")
    return RESAMPLE[value]


def _vision(config: Mapping[str, Any]) -> dict[str, Any]:
    vision = config.get("vision_config") or {}
    if not isinstance(vision, Mapping):
        raise mmp.SpecError(f"config.json: 'vision_config' must be an object, got {vision!r}")
    out = {k: vision.get(k, v) for k, v in VISION_DEFAULTS.items()}
    for k, v in out.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise mmp.SpecError(f"config.json: vision_config.{k} must be a positive integer, got {v!r}")
    return out


def _pairs(pinpoints: Any) -> Any:
    """Pinpoints compared as values, whether JSON lists or tuples."""
    if isinstance(pinpoints, (list, tuple)):
        return [list(p) if isinstance(p, (list, tuple)) else p for p in pinpoints]
    return pinpoints


def _check_preprocessor_keys(preprocessor_config: Any) -> mmp.ConfigKeys:
    keys = mmp.ConfigKeys(
        "preprocessor_config.json", preprocessor_config, FAMILY, [*PINNED, *CLASS_DEFAULTS, *NULL_ONLY, *NAMES]
    )
    keys.pinned(PINNED)
    for key in NULL_ONLY:
        if keys.values.get(key) not in (None, False):
            raise keys.error(key, f"must be null (not implemented), got {keys.values[key]!r}")
    keys.one_of(NAMES, nullable=True)
    return keys


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a LLaVA-OneVision model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") != MODEL_TYPE:
        return None
    keys = _check_preprocessor_keys(preprocessor_config)
    pp = keys.values
    size = _image_size(keys)
    vision = _vision(config)
    if vision["image_size"] != size:
        raise mmp.SpecError(
            f"config.json: vision_config.image_size={vision['image_size']!r} disagrees with the preprocessor's "
            f"size {size!r}"
        )
    pinpoints = pp.get("image_grid_pinpoints", CLASS_DEFAULTS["image_grid_pinpoints"])
    model_pinpoints = config.get("image_grid_pinpoints")
    if model_pinpoints is None:  # LlavaOnevisionConfig then takes the same default list
        model_pinpoints = CLASS_DEFAULTS["image_grid_pinpoints"]
    if _pairs(model_pinpoints) != _pairs(pinpoints):
        # The model unpacks the crops with its own pinpoints: a different list would
        # misplace every crop.
        raise mmp.SpecError("config.json: 'image_grid_pinpoints' disagrees with the preprocessor's")
    token = {k: config.get(k, v) for k, v in CONFIG_DEFAULTS.items()}
    if "image_token_id" in config and config["image_token_id"] != token["image_token_index"]:
        raise mmp.SpecError("config.json: 'image_token_id' disagrees with 'image_token_index'")
    spec = parse_spec(
        {
            "image_token_id": token["image_token_index"],
            "image_size": size,
            "image_grid_pinpoints": pinpoints,
            "image_mean": pp.get("image_mean", CLASS_DEFAULTS["image_mean"]),
            "image_std": pp.get("image_std", CLASS_DEFAULTS["image_std"]),
            "rescale_factor": pp.get("rescale_factor", CLASS_DEFAULTS["rescale_factor"]),
            "resample": _resample(keys),
            "num_image_tokens": (vision["image_size"] // vision["patch_size"]) ** 2,
            "vision_feature_select_strategy": token["vision_feature_select_strategy"],
            "vision_aspect_ratio": token["vision_aspect_ratio"],
        }
    )
    return spec.to_dict()
