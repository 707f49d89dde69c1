"""Resolve a ``qwen_vl`` spec from a model's ``config.json`` + ``preprocessor_config.json``
(+ ``video_preprocessor_config.json`` when the model has one, :mod:`.hf_video_config`).

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

from mm_framework.plugin import ConfigKeys, SpecError

from .hf_keys import PINNED, PROCESSOR_CLASSES
from .hf_video_config import VIDEO_ONLY, resolve_video
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

# transformers 5.24 Qwen2VLImageProcessor(Pil) class defaults.
CLASS_DEFAULTS: dict[str, Any] = {
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "image_mean": list(CLIP_MEAN),
    "image_std": list(CLIP_STD),
    "size": {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280},
}
IMAGE_KEYS = frozenset(PINNED) | frozenset(CLASS_DEFAULTS) | {"min_pixels", "max_pixels", "image_processor_type",
                                                              "processor_class"}
# vision_config key -> spec field: the model's own geometry must agree with the processor's.
VISION_KEYS = {
    "patch_size": "patch_size", "spatial_merge_size": "merge_size", "temporal_patch_size": "temporal_patch_size",
}


def _unsupported(key: str) -> str:
    if key in VIDEO_ONLY:  # the model has its own video_preprocessor_config.json
        return "is read by neither processor (the video processor reads video_preprocessor_config.json)"
    return "is not supported by the qwen_vl family"


def resolve(
    config: Mapping[str, Any],
    preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The spec dict for a Qwen-VL model, or ``None`` when the model is not one.

    ``video_preprocessor_config``: the model's ``video_preprocessor_config.json``; without
    it the video processor reads ``preprocessor_config.json``, whose video-only keys are
    then consumed for video (:mod:`.hf_video_config`).
    """
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    model_type = config["model_type"]
    for name, doc in (("preprocessor_config.json", preprocessor_config),
                      ("video_preprocessor_config.json", video_preprocessor_config)):
        if doc is not None and not isinstance(doc, Mapping):
            raise SpecError(f"{name}: expected an object, got {type(doc).__name__}")
    own_video = video_preprocessor_config is not None
    keys = ConfigKeys.preprocessor(
        preprocessor_config, "qwen_vl", IMAGE_KEYS if own_video else IMAGE_KEYS | VIDEO_ONLY, pinned=PINNED,
        names={"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": PROCESSOR_CLASSES},
        unsupported=_unsupported,
    )
    pp = keys.values
    min_pixels, max_pixels = ConfigKeys.qwen2_pixels(pp, CLASS_DEFAULTS["size"], keys.error)
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
    image = parse_spec(fields)
    _check_vision_config(config, image)
    video = resolve_video(model_type, config, image, video_preprocessor_config, keys)
    return parse_spec({**fields, **video}).to_dict()


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
