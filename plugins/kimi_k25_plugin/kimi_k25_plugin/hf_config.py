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
# Kimi_K25Config's video_token_id, vision_start/end_token_id, and <|media_content|> (not in the config;
# the Kimi K2 tokenizer's, from memory: docs/families/kimi_k25.md §5).
VIDEO_IDS = {"video_token_id": 163840, "vision_start_token_id": 163602, "vision_end_token_id": 163604}
MEDIA_CONTENT_ID = 163603
VIDEO_NAMES = {"video_processor_type": frozenset({"Kimi_K25VideoProcessor"}),
               "image_processor_type": frozenset({"Kimi_K25ImageProcessor"}),
               "processor_class": frozenset({"Kimi_K25Processor"})}
# Kimi_K25VideoProcessor's class attributes; the keys it shares with the image processor must
# resolve to the image's values (one normalization, one patch grid per spec).
VIDEO_DEFAULTS: dict[str, Any] = {
    **CLASS_DEFAULTS, "max_patches": 4096, "temporal_patch_size": 4, "fps": 2, "do_sample_frames": True,
}
SHARED = ("patch_size", "merge_size", "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std")
# return_metadata is the processor's to set (it asks for True); num_frames must stay unset (fps sampling).
VIDEO_KNOWN = {*PINNED, *VIDEO_DEFAULTS, *VIDEO_NAMES, "return_metadata", "num_frames"}


def _side(keys: mmp.ConfigKeys) -> int:
    value = keys.values.get("size", CLASS_DEFAULTS["size"])
    if (not isinstance(value, Mapping) or set(value) != {"max_height", "max_width"}
            or value["max_height"] != value["max_width"]):
        raise keys.error("size", "must be {'max_height': n, 'max_width': n} with identical values (the reference "
                                 f"refuses any other), got {value!r}")
    return value["max_height"]


def _video_fields(config: Mapping[str, Any], doc: Any, file: str, image: dict[str, Any]) -> dict[str, Any]:
    """The spec's video fields from the video processor's config ``doc`` (``file``)."""
    keys = mmp.ConfigKeys(file, doc, FAMILY, VIDEO_KNOWN)
    keys.pinned(PINNED)
    keys.one_of(VIDEO_NAMES, nullable=True)
    keys.boolean("return_metadata")
    vp = keys.values
    if vp.get("num_frames") is not None:
        raise keys.error("num_frames", f"must be null (fixed frame counts are not implemented), got "
                                       f"{vp['num_frames']!r}")
    for key in SHARED:
        value = vp.get(key, VIDEO_DEFAULTS[key])
        if value != image[key]:
            raise keys.error(key, f"is {value!r}, which differs from the image processor's {image[key]!r} "
                                  "(one value per spec)")
    resample = vp.get("resample", VIDEO_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (LANCZOS, BILINEAR, BICUBIC), got "
                                     f"{resample!r}")
    sample = vp.get("do_sample_frames", VIDEO_DEFAULTS["do_sample_frames"])
    ids = {k: config.get(k, v) for k, v in VIDEO_IDS.items()}
    return {
        "video_token_id": ids["video_token_id"], "media_begin_token_id": ids["vision_start_token_id"],
        "media_content_token_id": MEDIA_CONTENT_ID, "media_end_token_id": ids["vision_end_token_id"],
        "video_sample_frames": sample, "video_fps": vp.get("fps", VIDEO_DEFAULTS["fps"]) if sample else None,
        "video_max_patches": vp.get("max_patches", VIDEO_DEFAULTS["max_patches"]),
        "video_max_size_per_side": _side(keys),
        "temporal_patch_size": vp.get("temporal_patch_size", VIDEO_DEFAULTS["temporal_patch_size"]),
        "video_resample": RESAMPLE[resample],
    }


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
            video_preprocessor_config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The spec dict for a Kimi K2.5 model, or ``None`` when the model is not one. Without a
    ``video_preprocessor_config.json`` the video processor reads ``preprocessor_config.json``, as
    ``AutoVideoProcessor`` does (its keys over ``Kimi_K25VideoProcessor``'s class defaults)."""
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
    if video_preprocessor_config is None:
        video = _video_fields(config, preprocessor_config, "preprocessor_config.json (read by the video processor)",
                              fields)
    else:
        video = _video_fields(config, video_preprocessor_config, "video_preprocessor_config.json", fields)
    spec = parse_spec({**fields, **video})
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
