"""The video fields of a ``gemma4`` spec resolved from a model's configs, as transformers does.

``AutoVideoProcessor`` builds ``Gemma4VideoProcessor`` from ``video_preprocessor_config.json``
or, when the model has none, from ``preprocessor_config.json`` (so the image processor's
``max_soft_tokens``, ``do_normalize``, ... then hold for videos too); missing keys take the
class's attributes (docs/families/gemma4.md §5). Conservative like :mod:`.hf_config`: every
key feeds a field, is pinned to the one value implemented, is inert, or is a ``SpecError``
naming it. Patches are shared with images in a ``gemma4`` spec, so a video config whose
``patch_size`` or ``pooling_kernel_size`` disagrees is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY

# Gemma4VideoProcessor's class attributes the spec takes, by config key -> spec field.
FIELDS = {"max_soft_tokens": "video_max_soft_tokens", "do_sample_frames": "video_do_sample_frames",
          "num_frames": "video_num_frames", "fps": "video_fps", "do_rescale": "video_do_rescale",
          "rescale_factor": "video_rescale_factor", "do_normalize": "video_do_normalize",
          "image_mean": "video_image_mean", "image_std": "video_image_std"}
PINNED: dict[str, Any] = {"do_resize": True, "do_convert_rgb": True, "default_to_square": True, "size": None}
CLASS_NAMES = {"video_processor_type": frozenset({"Gemma4VideoProcessor"}),
               "image_processor_type": frozenset({"Gemma4ImageProcessor", "Gemma4ImageProcessorPil"}),
               "processor_class": frozenset({"Gemma4Processor"})}
# Inert: Gemma4Processor forces return_metadata on; image_seq_length is the processor's (unused).
INERT = ("return_metadata", "image_seq_length")
SHARED = ("patch_size", "pooling_kernel_size")
# Keys only a video processor reads (the rest are the image processor's too).
VIDEO_ONLY = frozenset({"do_sample_frames", "num_frames", "fps", "video_processor_type", "return_metadata"})
CLASS_DEFAULTS = {"max_soft_tokens": 70, "do_sample_frames": True, "num_frames": 32, "fps": None, "do_rescale": True,
                  "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": [0.0] * 3, "image_std": [1.0] * 3}


def resolve_video(doc: Mapping[str, Any], file: str, image_spec: Mapping[str, Any]) -> dict[str, Any]:
    """The video spec fields from ``doc`` (the file transformers reads them from)."""
    keys = mmp.ConfigKeys(file, doc, FAMILY, {*FIELDS, *PINNED, *CLASS_NAMES, *INERT, *SHARED, "resample"})
    keys.pinned(PINNED)
    keys.one_of(CLASS_NAMES, nullable=True)
    v = keys.values
    resample = v.get("resample", 3)
    if isinstance(resample, bool) or resample not in kernels.TRANSFORMERS_RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(kernels.TRANSFORMERS_RESAMPLE)} "
                                     f"(LANCZOS, BILINEAR, BICUBIC), got {resample!r}")
    for key in SHARED:
        if key in v and v[key] != image_spec[key]:
            raise keys.error(key, f"must equal the image processor's {key}={image_spec[key]!r} (a gemma4 spec "
                                  f"shares the patches), got {v[key]!r}")
    fields = {field: v.get(key, CLASS_DEFAULTS[key]) for key, field in FIELDS.items()}
    return {**fields, "video_resample": kernels.TRANSFORMERS_RESAMPLE[resample]}

