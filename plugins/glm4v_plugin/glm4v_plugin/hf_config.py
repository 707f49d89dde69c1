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

Video fields come from ``video_preprocessor_config.json`` (:func:`resolve_video`; the class
defaults when the model has none) and ``config.json``'s ``video_token_id`` and image marker
ids. ``video_timestamp_ids`` is never resolved: the configs do not hold the tokenizer's ids
(docs/families/glm4v.md §7).
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
# model_type -> its config class's default video_token_id.
VIDEO_TOKEN_IDS = {"glm4v": 151344, "glm46v": 151344, "glm4v_moe": 151364}
VIDEO_CLASSES = {"Glm4vVideoProcessor": "glm4v", "Glm46VVideoProcessor": "glm46v"}
# Glm4vVideoProcessor's / Glm46VVideoProcessor's class attributes (the two are equal).
VIDEO_DEFAULTS: dict[str, Any] = {
    "size": {"shortest_edge": 112 * 112, "longest_edge": 28 * 28 * 2 * 30000}, "fps": 2, "max_duration": 300,
    "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2, "image_mean": list(CLIP_MEAN),
    "image_std": list(CLIP_STD),
}
VIDEO_PINNED: dict[str, Any] = {k: v for k, v in PINNED.items() if k != "default_to_square"}
# Read by neither GLM video processor in 5.24: max_image_size (a class attribute no method
# reads), num_frames (the samplers take fps only), return_metadata (the processor forces it).
VIDEO_INERT = frozenset({"max_image_size", "num_frames", "return_metadata"})
VIDEO_KNOWN = {*VIDEO_PINNED, *VIDEO_DEFAULTS, *VIDEO_INERT, "do_sample_frames", "video_processor_type",
               "processor_class"}
# What a glm4v spec shares between images and videos (the video config must agree).
SHARED = ("patch_size", "merge_size", "temporal_patch_size", "image_mean", "image_std")
# vision_config key -> the spec field it must equal.
VISION_KEYS = {"patch_size": "patch_size", "spatial_merge_size": "merge_size",
               "temporal_patch_size": "temporal_patch_size"}


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
            video_preprocessor_config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
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
    image = parse_spec(fields)
    video = resolve_video(config, image, pp, video_preprocessor_config)
    spec = parse_spec({**fields, **video})
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    for key, field in VISION_KEYS.items():
        value = getattr(spec, field)
        if vision.get(key, value) != value:
            raise mmp.SpecError(f"config.json: vision_config.{key}={vision[key]!r} disagrees with the preprocessor's "
                                f"{field}={value}")
    return spec.to_dict()


def resolve_video(config: Mapping[str, Any], image: Any, pp: Mapping[str, Any],
                  doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """The video fields: ``doc`` (``video_preprocessor_config.json``) read key by key, or,
    when the model has none, ``pp`` (``preprocessor_config.json``, already consumed), which
    is what ``AutoVideoProcessor`` then builds the video processor from; missing keys take
    the class defaults. The variant is the video processor class named (else GLM-4.6V's when
    the processor class or the model type is GLM-4.6V's); a processor class of the other
    generation is refused (its timestamp text would not match the sampler's)."""
    if doc is None:
        keys = mmp.ConfigKeys("preprocessor_config.json", pp, FAMILY, pp)
    else:
        keys = mmp.ConfigKeys("video_preprocessor_config.json", doc, FAMILY, VIDEO_KNOWN,
                              unsupported=lambda key: "is not supported for video by the glm4v family")
        keys.pinned(VIDEO_PINNED)
        keys.boolean("do_sample_frames")
        keys.one_of({"processor_class": CLASS_NAMES["processor_class"]}, nullable=True)
    v = keys.values
    named = v.get("processor_class") or pp.get("processor_class")
    by_processor = None if named is None else ("glm46v" if named == "Glm46VProcessor" else "glm4v")
    vpt = v.get("video_processor_type")
    if vpt is not None and vpt not in VIDEO_CLASSES:
        raise keys.error("video_processor_type", f"must be one of {sorted(VIDEO_CLASSES)}, got {vpt!r}")
    variant = VIDEO_CLASSES.get(vpt) or by_processor or ("glm46v" if config["model_type"] == "glm46v" else "glm4v")
    if by_processor is not None and by_processor != variant:
        raise keys.error("video_processor_type", f"is {vpt!r} but the processor class is {named!r}: their frame "
                                                 f"sampling and timestamp text are of different GLM generations")
    for key in SHARED:
        value, want = v.get(key, VIDEO_DEFAULTS[key]), getattr(image, key)
        if (list(value) if isinstance(value, (list, tuple)) else value) != (list(want) if isinstance(want, tuple)
                                                                            else want):
            raise keys.error(key, f"is {value!r} for video but {want!r} for images; a glm4v spec shares them")
    size = v.get("size", VIDEO_DEFAULTS["size"])
    if not isinstance(size, Mapping) or set(size) != {"shortest_edge", "longest_edge"}:
        raise keys.error("size", f"must hold exactly shortest_edge and longest_edge, got {size!r}")
    fps = v.get("fps", VIDEO_DEFAULTS["fps"])
    return {
        "video_token_id": config.get("video_token_id", VIDEO_TOKEN_IDS[config["model_type"]]),
        "image_start_token_id": config.get("image_start_token_id", 151339),
        "image_end_token_id": config.get("image_end_token_id", 151340),
        "video_variant": variant, "video_min_pixels": size["shortest_edge"], "video_max_pixels": size["longest_edge"],
        "video_sample_frames": v.get("do_sample_frames", True),
        "video_fps": float(fps) if isinstance(fps, (int, float)) and not isinstance(fps, bool) else fps,
        "video_max_duration": v.get("max_duration", VIDEO_DEFAULTS["max_duration"]),
    }
