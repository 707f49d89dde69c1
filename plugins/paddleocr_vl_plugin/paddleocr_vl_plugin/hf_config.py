"""Resolve a ``paddleocr_vl`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, or is refused by name. Missing keys take the
transformers 5.24 defaults ``from_pretrained`` would use (``PaddleOCRVLImageProcessorPil``'s
class attributes and ``PaddleOCRVLConfig``'s ``image_token_id``); ``min_pixels`` /
``max_pixels`` override ``size`` as the processor's ``__init__`` does
(:meth:`mmp.ConfigKeys.qwen2_pixels`). The vision tower's patch and merge sizes must be the
processor's. The spec takes the PIL backend and transformers' PIL-object decoding (alpha
composited on white, no EXIF transpose); ``"backend": "torchvision"`` selects the other
class's arithmetic (docs/families/paddleocr_vl.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .spec import CLIP_MEAN, CLIP_STD, FAMILY, parse_spec

MODEL_TYPES = frozenset({"paddleocr_vl"})
CLASS_NAMES = {
    "image_processor_type": frozenset({"PaddleOCRVLImageProcessor", "PaddleOCRVLImageProcessorPil",
                                       "PaddleOCRVLImageProcessorFast"}),
    "processor_class": frozenset({"PaddleOCRVLProcessor"}),
}
# Keys pinned to the single value implemented (PILImageResampling.BICUBIC is 3).
PINNED: dict[str, Any] = {**dict.fromkeys(("do_resize", "do_rescale", "do_normalize", "do_convert_rgb"), True),
                          "rescale_factor": 1 / 255, "resample": 3, "default_to_square": False}
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"shortest_edge": 384 * 384, "longest_edge": 1536 * 1536},
    "patch_size": 14, "merge_size": 2, "temporal_patch_size": 1,
    "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD),
}
IMAGE_TOKEN_ID = 100295  # PaddleOCRVLConfig's default
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES, "min_pixels", "max_pixels"}


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a PaddleOCR-VL model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    min_pixels, max_pixels = mmp.ConfigKeys.qwen2_pixels(pp, CLASS_DEFAULTS["size"], keys.error)
    fields = {
        "image_token_id": config.get("image_token_id", IMAGE_TOKEN_ID),
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("patch_size", "merge_size", "temporal_patch_size", "image_mean",
                                                     "image_std")},
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
    }
    spec = parse_spec(fields)
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    for key, field, value in (("patch_size", "patch_size", spec.patch_size),
                              ("spatial_merge_size", "merge_size", spec.merge_size)):
        if vision.get(key, value) != value:
            raise mmp.SpecError(f"config.json: vision_config.{key}={vision[key]!r} disagrees with the preprocessor's "
                                f"{field}={value}")
    return spec.to_dict()
