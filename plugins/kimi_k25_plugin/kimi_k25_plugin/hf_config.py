"""Resolve a ``kimi_k25`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, names a class, or is refused by name. Missing keys take
the transformers 5.24 defaults ``from_pretrained`` would use, ``Kimi_K25ImageProcessor``'s
class attributes, and ``Kimi_K25Config``'s ``image_token_id``. The vision tower's patch size
and merge kernel must be the processor's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY, IMAGENET_STANDARD, parse_spec

MODEL_TYPES = frozenset({"kimi_k25"})
CLASS_NAMES = {"image_processor_type": frozenset({"Kimi_K25ImageProcessor"}),
               "processor_class": frozenset({"Kimi_K25Processor"})}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# do_resize=False hands the unpadded image to patchify (any size not a multiple of the patch
# fails there, and the merger needs the merge kernel): only the resizing path is cloned.
PINNED: dict[str, Any] = {"do_resize": True, "do_convert_rgb": True}
# Kimi_K25ImageProcessor's class attributes.
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"max_height": 512, "max_width": 512},
    "resample": 3,
    "max_patches": 16384,
    "patch_size": 14,
    "merge_size": 2,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": list(IMAGENET_STANDARD),
    "image_std": list(IMAGENET_STANDARD),
}
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES}
IMAGE_TOKEN_ID = 163605  # Kimi_K25Config's default, <|media_pad|>


def _side(keys: mmp.ConfigKeys) -> int:
    value = keys.values.get("size", CLASS_DEFAULTS["size"])
    if (not isinstance(value, Mapping) or set(value) != {"max_height", "max_width"}
            or value["max_height"] != value["max_width"]):
        raise keys.error("size", "must be {'max_height': n, 'max_width': n} with identical values (the reference "
                                 f"refuses any other), got {value!r}")
    return value["max_height"]


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Kimi K2.5 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (LANCZOS, BILINEAR, BICUBIC), got "
                                     f"{resample!r}")
    fields = {
        "image_token_id": config.get("image_token_id", IMAGE_TOKEN_ID),
        "max_size_per_side": _side(keys),
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("max_patches", "patch_size", "merge_size", "do_rescale",
                                                     "rescale_factor", "do_normalize", "image_mean", "image_std")},
    }
    spec = parse_spec(fields)
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    patch = vision.get("patch_size", spec.patch_size)
    if patch != spec.patch_size:
        raise mmp.SpecError(f"config.json: vision_config.patch_size={patch!r} disagrees with the preprocessor's "
                            f"patch_size={spec.patch_size}")
    kernel = vision.get("merge_kernel_size", [spec.merge_size] * 2)
    if not isinstance(kernel, (list, tuple)) or list(kernel) != [spec.merge_size] * 2:
        raise mmp.SpecError(f"config.json: vision_config.merge_kernel_size={kernel!r} disagrees with the "
                            f"preprocessor's merge_size={spec.merge_size} (a square kernel of it)")
    return spec.to_dict()
