"""Resolve a ``gemma4`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, or is refused by name. Missing keys take transformers
5.24's ``Gemma4ImageProcessorPil`` class attributes; the token ids take ``Gemma4Config``'s
defaults. ``image_seq_length`` (``processor_config.json``, sometimes merged in) is accepted
and unused: ``Gemma4Processor`` expands each image by its own soft-token count, never by it.
The vision tower's ``patch_size`` and ``pooling_kernel_size`` must agree with the processor's.
Decoding follows transformers' PIL-object entry (alpha composited on white, no EXIF transpose).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .hf_video_config import VIDEO_ONLY, resolve_video
from .spec import DEFAULTS, FAMILY, parse_spec

MODEL_TYPES = frozenset({"gemma4"})
CLASS_NAMES = {
    "image_processor_type": frozenset({"Gemma4ImageProcessor", "Gemma4ImageProcessorPil"}),
    "processor_class": frozenset({"Gemma4Processor"}),
}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# Keys pinned to the single value implemented (size is unused by the aspect-ratio resize; the
# torchvision class sets it to null).
PINNED: dict[str, Any] = {"do_resize": True, "do_convert_rgb": True, "default_to_square": True, "size": None}
SPEC_KEYS = ("patch_size", "max_soft_tokens", "pooling_kernel_size", "do_rescale", "rescale_factor",
             "do_normalize", "image_mean", "image_std")
# A preprocessor_config.json that is the video processor's source too may hold its keys.
KNOWN = {*PINNED, *CLASS_NAMES, *SPEC_KEYS, "resample", "image_seq_length", *VIDEO_ONLY}
# Gemma4Config's token-id defaults.
MODEL_DEFAULTS = {"image_token_id": 258880, "boi_token_id": 255999, "eoi_token_id": 258882, "video_token_id": 258884}


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
            video_preprocessor_config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The spec dict for a Gemma 4 model, or ``None`` when the model is not one. The video
    fields come from ``video_preprocessor_config`` or, without one, from ``preprocessor_config``
    (:mod:`.hf_video_config`)."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    resample = pp.get("resample", 3)
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error(
            "resample", f"must be one of {sorted(RESAMPLE)} (Pillow LANCZOS, BILINEAR, BICUBIC), got {resample!r}"
        )
    image = {k: pp.get(k, DEFAULTS[k]) for k in SPEC_KEYS}
    if video_preprocessor_config is None:
        video = resolve_video(preprocessor_config, "preprocessor_config.json", image)
    else:
        video = resolve_video(video_preprocessor_config, "video_preprocessor_config.json", image)
    spec = parse_spec({
        **{k: config.get(k, v) for k, v in MODEL_DEFAULTS.items()},
        **image,
        "resample": RESAMPLE[resample],
        **video,
    })
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    for key in ("patch_size", "pooling_kernel_size"):
        if vision.get(key) is not None and vision[key] != getattr(spec, key):
            raise mmp.SpecError(f"config.json: vision_config.{key}={vision[key]!r} disagrees with the "
                                f"preprocessor's {key}={getattr(spec, key)!r}")
    return spec.to_dict()
