"""Resolve a ``glm4v`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, or is refused by name. Missing keys take the
transformers 5.24 defaults ``from_pretrained`` would use: ``Glm4vImageProcessor(Pil)``'s
class attributes (``size`` 112*112 .. 28*28*15000, which no published checkpoint keeps) and
the config class's ``image_token_id`` for the model type (``Glm4vConfig`` and
``Glm46VConfig`` 151343, ``Glm4vMoeConfig`` 151363). Unlike Qwen2-VL's, these classes have no
``min_pixels`` / ``max_pixels`` arguments (transformers ignores such keys), so they are
refused rather than guessed. The vision tower's patch, merge and temporal sizes must be the
processor's. The spec takes the PIL backend and transformers' PIL-object decoding (alpha
composited on white, no EXIF transpose); ``"backend": "torchvision"`` selects the other
class's arithmetic (docs/families/glm4v.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .spec import CLIP_MEAN, CLIP_STD, FAMILY, parse_spec

# model_type -> its config class's default image_token_id.
IMAGE_TOKEN_IDS = {"glm4v": 151343, "glm46v": 151343, "glm4v_moe": 151363}
CLASS_NAMES = {
    "image_processor_type": frozenset({f"{stem}{kind}" for stem in ("Glm4vImageProcessor", "Glm46VImageProcessor")
                                       for kind in ("", "Pil", "Fast")}),
    "processor_class": frozenset({"Glm4vProcessor", "Glm46VProcessor"}),
}
# Keys pinned to the single value implemented (PILImageResampling.BICUBIC is 3).
PINNED: dict[str, Any] = {**dict.fromkeys(("do_resize", "do_rescale", "do_normalize", "do_convert_rgb"), True),
                          "rescale_factor": 1 / 255, "resample": 3, "default_to_square": False}
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 15000},
    "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2,
    "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD),
}
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES}
# vision_config key -> the spec field it must equal.
VISION_KEYS = {"patch_size": "patch_size", "spatial_merge_size": "merge_size",
               "temporal_patch_size": "temporal_patch_size"}


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a GLM-4.1V / 4.5V / 4.6V model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in IMAGE_TOKEN_IDS:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    # No min_pixels / max_pixels can be present (they are not KNOWN): this reads `size` alone.
    min_pixels, max_pixels = mmp.ConfigKeys.qwen2_pixels(pp, CLASS_DEFAULTS["size"], keys.error)
    fields = {
        "image_token_id": config.get("image_token_id", IMAGE_TOKEN_IDS[config["model_type"]]),
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("patch_size", "merge_size", "temporal_patch_size", "image_mean",
                                                     "image_std")},
        "min_pixels": min_pixels,
        "max_pixels": max_pixels,
    }
    spec = parse_spec(fields)
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    for key, field in VISION_KEYS.items():
        value = getattr(spec, field)
        if vision.get(key, value) != value:
            raise mmp.SpecError(f"config.json: vision_config.{key}={vision[key]!r} disagrees with the preprocessor's "
                                f"{field}={value}")
    return spec.to_dict()
