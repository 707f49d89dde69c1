"""Resolve a ``minicpmv4_6`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, names a class, or is inert for images (``use_image_id``
feeds the spec: the processor reads it from its image processor); anything else is refused
by name. Missing keys take ``MiniCPMV4_6ImageProcessorPil``'s class attributes, what
``from_pretrained`` would use.

The prompt's marker, digit and newline ids live in the tokenizer, which this resolver does
not read: they come from the published vocabulary that ``config.json``'s ``image_token_id``
identifies (the preset's, docs/families/minicpmv4_6.md §1). A model with another
vocabulary is refused naming ``image_token_id``: write its spec by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY, PRESETS, TOKENS, parse_spec

MODEL_TYPES = frozenset({"minicpmv4_6"})
CLASS_NAMES = {
    "image_processor_type": frozenset({"MiniCPMV4_6ImageProcessor", "MiniCPMV4_6ImageProcessorPil",
                                       "MiniCPMV4_6ImageProcessorFast"}),
    "processor_class": frozenset({"MiniCPMV4_6Processor"}),
}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# RGB conversion is the only path implemented; the resize is what the processor computes
# the sizes for (without it, slices of unequal size would not fit the grid).
PINNED: dict[str, Any] = {"do_convert_rgb": True, "do_resize": True}
# MiniCPMV4_6ImageProcessorPil's class attributes (IMAGENET_STANDARD mean and std).
CLASS_DEFAULTS: dict[str, Any] = {
    "resample": 3,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "max_slice_nums": 9,
    "scale_resolution": 448,
    "patch_size": 14,
    "slice_mode": True,
    "downsample_mode": "16x",
    "use_image_id": True,
}
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES}
_TOKENIZER_FIELDS = (*(t for t in TOKENS if t != "image_token_id"), "digit_token_ids")
TOKENIZERS = {PRESETS["minicpm_v_4_6"]["image_token_id"]: {k: PRESETS["minicpm_v_4_6"][k] for k in _TOKENIZER_FIELDS}}


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a MiniCPM-V 4.6 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (Pillow LANCZOS, BILINEAR, BICUBIC), "
                                     f"got {resample!r}")
    image_token_id = config.get("image_token_id")
    tokenizer = TOKENIZERS.get(image_token_id) if isinstance(image_token_id, int) else None
    if tokenizer is None:
        raise mmp.SpecError(
            f"config.json: 'image_token_id'={image_token_id!r} is not one of the published vocabularies "
            f"({', '.join(map(str, sorted(TOKENIZERS)))}) whose marker, digit and newline ids the minicpmv4_6 family "
            "knows; write the spec with the tokenizer's ids by hand")
    mode = config.get("downsample_mode", CLASS_DEFAULTS["downsample_mode"])
    if pp.get("downsample_mode", mode) != mode:
        raise keys.error("downsample_mode", f"={pp['downsample_mode']!r} disagrees with config.json "
                                            f"downsample_mode={mode!r}")
    fields = {
        "image_token_id": image_token_id,
        **tokenizer,
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in CLASS_DEFAULTS if k != "resample"},
    }
    return parse_spec(fields).to_dict()
