"""Resolve a ``deepseek_ocr2`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, or names a class; anything else is refused by name.
Missing keys take the transformers 5.24 defaults ``from_pretrained`` would use, the class
attributes of ``DeepseekOcr2ImageProcessorPil`` (equal to ``DeepseekOcr2ImageProcessor``'s).

``DeepseekOcr2Processor`` passes its image processor ``crop_to_patches=True``,
``min_patches=2`` and ``max_patches=6`` on every call (its ``images_kwargs``), whatever the
file says, so those keys are pinned to the processor's values: a file that differs would
make the image processor alone and the processor disagree. ``size`` must be a square (the
processor reads only its height). ``patch_size`` and ``downsample_ratio`` live in
``processor_config.json``, which this hook does not receive: the processor's defaults
(16, 4) are used. The image token id is ``config.json``'s ``image_token_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY, parse_spec

MODEL_TYPES = frozenset({"deepseek_ocr2"})
IMAGE_PROCESSOR_TYPES = frozenset(f"DeepseekOcr2ImageProcessor{s}" for s in ("", "Fast", "Pil"))
CLASS_NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": frozenset({"DeepseekOcr2Processor"})}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# RGB conversion is the only decode implemented; the reference resizes whatever do_resize says;
# the processor overrides the crop options on every call.
PINNED: dict[str, Any] = {"do_convert_rgb": True, "do_resize": True, "crop_to_patches": True, "min_patches": 2,
                          "max_patches": 6}
# DeepseekOcr2ImageProcessorPil's class attributes.
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"height": 1024, "width": 1024},
    "tile_size": 768,
    "resample": 3,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "background_color": [127, 127, 127],
}
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES}
# DeepseekOcr2Config's image_token_id; DeepseekOcr2Processor's patch_size and downsample_ratio.
MODEL_DEFAULTS = {"image_token_id": 128815, "patch_size": 16, "downsample_ratio": 4}


def _side(keys: mmp.ConfigKeys) -> Any:
    value = keys.values.get("size", CLASS_DEFAULTS["size"])
    if not isinstance(value, Mapping) or set(value) != {"height", "width"} or value["height"] != value["width"]:
        raise keys.error("size", f"must be a square {{'height': n, 'width': n}}, got {value!r}")
    return value["height"]


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a DeepSeek-OCR-2 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (Pillow LANCZOS, BILINEAR, BICUBIC), "
                                     f"got {resample!r}")
    fields = {
        "image_token_id": config.get("image_token_id", MODEL_DEFAULTS["image_token_id"]),
        "size": _side(keys),
        "patch_size": MODEL_DEFAULTS["patch_size"],
        "downsample_ratio": MODEL_DEFAULTS["downsample_ratio"],
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("tile_size", "do_rescale", "rescale_factor", "do_normalize",
                                                     "image_mean", "image_std", "background_color")},
    }
    return parse_spec(fields).to_dict()
