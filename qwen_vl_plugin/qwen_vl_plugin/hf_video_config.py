"""The video fields of a ``qwen_vl`` spec resolved from a model's configs, as transformers does.

``AutoVideoProcessor`` builds ``Qwen2VLVideoProcessor`` (Qwen2-VL, Qwen2.5-VL) or
``Qwen3VLVideoProcessor`` (Qwen3-VL, Qwen3.5 and their MoE variants) from the model's
``video_preprocessor_config.json`` or, when it has none (every published Qwen2/2.5
checkpoint), from ``preprocessor_config.json``; missing keys take the class defaults
(docs/families/qwen_vl_video.md §1). The token ids come from ``config.json`` (the config
classes' defaults when absent), ``tokens_per_second`` from Qwen2.5-VL's ``vision_config``
(class default 4), the timestamp ids from the vocabulary the model type ships with (§5).

Conservative like :mod:`.hf_config`: every key of the video processor's dict feeds a
field, is pinned to the one value implemented, is known to be inert, or is a
:class:`SpecError` naming it. The video processor shares the image processor's patch
geometry and statistics in a ``qwen_vl`` spec, so a video config that disagrees is
refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework.plugin import ConfigKeys

from .hf_keys import PINNED, PROCESSOR_CLASSES
from .spec import CLIP_MEAN, CLIP_STD, HALF, QwenVlSpec
from .video_prompt import QWEN2_TIMESTAMPS, QWEN3_5_TIMESTAMPS
from .video_spec import TIMESTAMP_PIECES, timestamp_ids

# model_type -> (video processor, the config class defaults of the video, vision start and
# vision end ids, the vocabulary's timestamp ids)
MODELS: dict[str, tuple[str, int, int, int, Any]] = {
    "qwen2_vl": ("qwen2", 151656, 151652, 151653, None),
    "qwen2_5_vl": ("qwen2", 151656, 151652, 151653, None),
    "qwen3_vl": ("qwen3", 151656, 151652, 151653, QWEN2_TIMESTAMPS),
    "qwen3_vl_moe": ("qwen3", 151656, 151652, 151653, QWEN2_TIMESTAMPS),
    "qwen3_5": ("qwen3", 248057, 248053, 248054, QWEN3_5_TIMESTAMPS),
    "qwen3_5_moe": ("qwen3", 248057, 248053, 248054, QWEN3_5_TIMESTAMPS),
}
CLASS_NAMES = {"qwen2": "Qwen2VLVideoProcessor", "qwen3": "Qwen3VLVideoProcessor"}
# transformers 5.24 class attributes of the two video processors.
CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "qwen2": {"size": {"shortest_edge": 128 * 28 * 28, "longest_edge": 28 * 28 * 768}, "do_sample_frames": False,
              "fps": None, "min_frames": 4, "max_frames": 768, "patch_size": 14, "temporal_patch_size": 2,
              "merge_size": 2, "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD)},
    "qwen3": {"size": {"shortest_edge": 128 * 32 * 32, "longest_edge": 32 * 32 * 768}, "do_sample_frames": True,
              "fps": 2, "min_frames": 4, "max_frames": 768, "patch_size": 16, "temporal_patch_size": 2,
              "merge_size": 2, "image_mean": list(HALF), "image_std": list(HALF)},
}
# Keys only a video processor reads: preprocessor_config.json may hold them when it is the
# video processor's source too. max_video_tokens and return_metadata are consumed as inert
# in 5.24: the first matters only with cap_pixels_per_frame (refused unless off), the
# second is forced on by the Qwen2.5/3 processors and changes no tensor of Qwen2-VL's.
VIDEO_ONLY = frozenset({"do_sample_frames", "fps", "num_frames", "min_frames", "max_frames", "cap_pixels_per_frame",
                        "max_video_tokens", "return_metadata", "video_processor_type"})
# What a qwen_vl spec shares between images and videos (the video config must agree).
SHARED = ("patch_size", "temporal_patch_size", "merge_size", "image_mean", "image_std")


def resolve_video(
    model_type: str, config: Mapping[str, Any], image: QwenVlSpec, own: Mapping[str, Any] | None,
    image_keys: ConfigKeys,
) -> dict[str, Any]:
    """The video spec fields, from the video processor's dict: ``own``, the model's
    ``video_preprocessor_config.json``, else ``preprocessor_config.json`` (``image_keys``,
    which the image resolver has consumed)."""
    processor, video_id, start_id, end_id, timestamps = MODELS[model_type]
    defaults = CLASS_DEFAULTS[processor]
    keys = image_keys
    if own is not None:
        known = set(PINNED) | set(defaults) | VIDEO_ONLY | {"min_pixels", "max_pixels", "processor_class"}
        keys = ConfigKeys("video_preprocessor_config.json", own, "qwen_vl", known,
                          unsupported=lambda key: "is not supported for video by the qwen_vl family")
        keys.pinned(PINNED)
        keys.one_of({"processor_class": PROCESSOR_CLASSES}, nullable=True)
    source, err = keys.values, keys.error
    vpt = source.get("video_processor_type")
    if vpt is not None and vpt != CLASS_NAMES[processor]:
        raise err(
            "video_processor_type", f"must be {CLASS_NAMES[processor]!r} for model_type {model_type!r}, got {vpt!r}"
        )
    if source.get("cap_pixels_per_frame") not in (None, False):
        raise err("cap_pixels_per_frame", "must be false or null (the capped budget is not implemented), got "
                                          f"{source['cap_pixels_per_frame']!r}")
    if source.get("num_frames") is not None:
        raise err(
            "num_frames",
            f"must be null (sampling a fixed frame count is not implemented), got {source['num_frames']!r}",
        )
    for key in SHARED:
        value, want = source.get(key, defaults[key]), getattr(image, key)
        given = list(value) if isinstance(value, (list, tuple)) else value
        if given != (list(want) if isinstance(want, tuple) else want):
            raise err(key, f"is {value!r} for video but {want!r} for images; a qwen_vl spec shares them")
    if processor == "qwen2":
        min_pixels, max_pixels = ConfigKeys.qwen2_pixels(source, defaults["size"], err)
    else:
        # Qwen3VLVideoProcessor reads only size; top-level min/max_pixels are ignored.
        size = source.get("size", defaults["size"])
        if not isinstance(size, Mapping) or set(size) != {"shortest_edge", "longest_edge"}:
            raise err("size", f"must hold exactly shortest_edge and longest_edge, got {size!r}")
        min_pixels, max_pixels = size["shortest_edge"], size["longest_edge"]
    sample = source.get("do_sample_frames", defaults["do_sample_frames"])
    if not isinstance(sample, bool):
        raise err("do_sample_frames", f"must be true or false, got {sample!r}")
    fields: dict[str, Any] = {"video_processor": processor, "video_token_id": config.get("video_token_id", video_id),
                              "video_min_pixels": min_pixels, "video_max_pixels": max_pixels,
                              "video_sample_frames": sample}
    if sample:  # fps and the frame bounds matter only to the sampler
        fields.update(video_fps=source.get("fps", defaults["fps"]),
                      video_min_frames=source.get("min_frames", defaults["min_frames"]),
                      video_max_frames=source.get("max_frames", defaults["max_frames"]))
        if processor == "qwen2" and fields["video_fps"] is None:
            raise err("fps", "is required when do_sample_frames is true (transformers' Qwen2 sampler fails without it)")
    if model_type == "qwen2_5_vl":
        vision = config.get("vision_config") or {}
        fields["tokens_per_second"] = vision.get("tokens_per_second", 4) if isinstance(vision, Mapping) else 4
    if processor == "qwen3":
        fields.update(vision_start_token_id=config.get("vision_start_token_id", start_id),
                      vision_end_token_id=config.get("vision_end_token_id", end_id),
                      timestamp_token_ids=dict(zip(TIMESTAMP_PIECES, timestamp_ids(timestamps))))
    return fields
