"""The ``glm4v`` spec: its fields, their validation, and the shipped presets.

A spec is ``{"family": "glm4v", **fields}``; the factory receives the fields without
``"family"``. The fields are the image fields every Qwen2-VL-style family has
(:class:`mmp.PatchGridSpec`, read with their rules); GLM-4.1V, GLM-4.5V and GLM-4.6V differ
only in their values (the image token's id), so a checkpoint is a preset, not a variant.
Facts behind the fields: docs/families/glm4v.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

import mm_framework as mmf
from mm_framework import plugin as mmp

FAMILY = "glm4v"
# The most pixels any image may be scaled to: the core's default decode bound; min_pixels
# pulls every image up towards it, so above it a typo allocates gigabytes per image.
MAX_IMAGE_PIXELS = mmf.Limits().max_image_pixels
# The GLM-4 vocabularies (151552 entries) fit int32.
MAX_ID = 2**31 - 1
# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD, the image processors' statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
# "composite": transformers' convert_to_rgb of a PIL image (alpha over white); "drop":
# Pillow's convert("RGB") (transformers' load_image of a path or URL).
ALPHA_MODES = ("composite", "drop")
# Each patch repeats the image this many times along its channels (and the sizing counts
# the pixels that many times); a typo must not multiply every feature.
MAX_TEMPORAL = 16
# GLM-4.1V's video processor (Glm4vVideoProcessor) and GLM-4.6V's (Glm46VVideoProcessor):
# they differ in frame sampling and in the timestamp text after each frame.
VARIANTS = ("glm4v", "glm46v")
# The most seconds of a clip the GLM-4.1V sampler reads at its own rate; longer clips are
# spread over max_duration * fps frames. A typo must not ask for millions of frames.
MAX_DURATION = 86400
REQUIRED = mmp.PatchGridSpec.REQUIRED
# Video is on when video_token_id is set; the other values are the classes' defaults.
VIDEO_DEFAULTS: dict[str, Any] = {
    "video_token_id": None, "image_start_token_id": 151339, "image_end_token_id": 151340,
    "video_variant": "glm4v", "video_min_pixels": 112 * 112, "video_max_pixels": 28 * 28 * 2 * 30000,
    "video_sample_frames": True, "video_fps": 2.0, "video_max_duration": 300, "video_timestamp_ids": None,
}
DEFAULTS = {**mmp.PatchGridSpec.DEFAULTS, **VIDEO_DEFAULTS}


def _timestamp_ids(f: mmp.SpecFields, value: Any) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """``video_timestamp_ids``: timestamp text -> the model tokenizer's ids of that text alone
    (docs/families/glm4v.md §7), as sorted pairs so the spec stays hashable."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise f.error("video_timestamp_ids", f"must be an object of timestamp text -> token ids, got {value!r}")
    out = []
    for text, ids in value.items():
        if not isinstance(text, str) or not text:
            raise f.error("video_timestamp_ids", f"keys must be non-empty strings, got {text!r}")
        if (not isinstance(ids, (list, tuple)) or not ids
                or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i <= MAX_ID for i in ids)):
            raise f.error("video_timestamp_ids", f"{text!r} must map to a non-empty list of token ids, got {ids!r}")
        out.append((text, tuple(ids)))
    return tuple(sorted(out))


@attrs.frozen
class Glm4vSpec(mmp.PatchGridSpec):
    """A validated ``glm4v`` spec. Build it with :func:`parse_spec`."""

    video_token_id: int | None = None
    image_start_token_id: int = 151339
    image_end_token_id: int = 151340
    video_variant: str = "glm4v"
    video_min_pixels: int = 112 * 112
    video_max_pixels: int = 28 * 28 * 2 * 30000
    # do_sample_frames: off, every frame given is used (the clip needs no fps but for the
    # prompt's timestamps, which then take the processors' 24).
    video_sample_frames: bool = True
    video_fps: float = 2.0
    video_max_duration: int = 300
    video_timestamp_ids: tuple[tuple[str, tuple[int, ...]], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        video = {k: getattr(self, k) for k in VIDEO_DEFAULTS}
        if self.video_timestamp_ids is not None:
            video["video_timestamp_ids"] = {t: list(ids) for t, ids in self.video_timestamp_ids}
        return {"family": FAMILY, **self.image_fields(), **video}


def parse_spec(params: Mapping[str, Any]) -> Glm4vSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`Glm4vSpec`. ``backend``
    "pil" clones Glm4vImageProcessorPil, "torchvision" Glm4vImageProcessor (the GLM-4.6V
    classes are the same code)."""
    f = mmp.SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    image = mmp.PatchGridSpec.read(f, max_image_pixels=MAX_IMAGE_PIXELS, alpha_modes=ALPHA_MODES,
                                   max_id=MAX_ID, max_temporal=MAX_TEMPORAL, pixels=mmp.PatchPixels.KINDS)
    video = {
        **{k: f.integer(k, minimum=0, maximum=MAX_ID, nullable=k == "video_token_id")
           for k in ("video_token_id", "image_start_token_id", "image_end_token_id")},
        "video_variant": f.choice("video_variant", VARIANTS),
        "video_min_pixels": f.integer("video_min_pixels", minimum=1),
        "video_max_pixels": f.integer("video_max_pixels", minimum=1),
        "video_sample_frames": f.boolean("video_sample_frames"),
        "video_fps": f.number("video_fps", positive=True),
        "video_max_duration": f.integer("video_max_duration", minimum=1, maximum=MAX_DURATION),
        "video_timestamp_ids": _timestamp_ids(f, params.get("video_timestamp_ids")),
    }
    if video["video_max_pixels"] < image["temporal_patch_size"] * (image["patch_size"] * image["merge_size"]) ** 2:
        raise f.error("video_max_pixels", "must hold at least one merged block per temporal patch")
    if video["video_min_pixels"] > video["video_max_pixels"]:
        raise f.error("video_min_pixels", "must not exceed video_max_pixels")
    marks = {image["image_token_id"], video["image_start_token_id"], video["image_end_token_id"]}
    if video["video_token_id"] is not None and len(marks | {video["video_token_id"]}) != 4:
        # A frame's markers and pads must be told apart from the placeholder and each other.
        raise f.error("video_token_id", "must differ from image_token_id, image_start_token_id and "
                                        "image_end_token_id, which must differ from each other")
    return Glm4vSpec(**image, **video)


def _published(image_token_id: int, video_token_id: int, variant: str) -> dict[str, Any]:
    # Every published GLM-4.xV preprocessor_config.json: size 112*112 .. 9633792 pixels
    # (14*14*2*2*2*6144, smart_resize's default, not the classes' 28*28*15000), 14-pixel
    # patches merged 2x2, a temporal patch of 2, CLIP statistics.
    return Glm4vSpec(
        image_token_id=image_token_id, patch_size=14, merge_size=2, temporal_patch_size=2, min_pixels=112 * 112,
        max_pixels=9633792, image_mean=CLIP_MEAN, image_std=CLIP_STD, video_token_id=video_token_id,
        video_variant=variant,
    ).to_dict()


# <|image|> is 151343 in GLM-4.1V's vocabulary (GLM-4-0414's) and 151363 in GLM-4.5's,
# which GLM-4.5V and GLM-4.6V use (docs/families/glm4v.md: which values were verified).
PRESETS: dict[str, dict[str, Any]] = {
    "glm4_1v_9b_thinking": _published(151343, 151344, "glm4v"),
    "glm4_5v": _published(151363, 151364, "glm4v"),
    "glm4_6v": _published(151363, 151364, "glm46v"),
}
