"""The ``qwen_vl`` spec: its fields, their validation, and the shipped presets.

A spec is ``{"family": "qwen_vl", **fields}``; the factory receives the fields without
``"family"``. Every field is checked and every failure is a :class:`SpecError` that
names the field; unknown fields are errors too, so a typo can never silently fall back
to a default. The video fields are optional as a group (:mod:`.video_spec`), and so are
the qwen-vl-utils fields (:mod:`.vision_info`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework import Limits
from mm_framework.plugin import PatchGridSpec, PatchPixels, SpecFields

from .video_prompt import QWEN2_TIMESTAMPS, QWEN3_5_TIMESTAMPS
from .video_spec import VIDEO_FIELDS, VideoSpec, check_pixels, parse_video
from .vision_info import VISION_INFO_FIELDS, VisionInfo, parse_vision_info

FAMILY = "qwen_vl"

# The largest image the core decodes by default (Pillow's decompression-bomb bound). No
# image may be scaled up past it: min_pixels pulls every image up to its size and one
# merged block is the smallest image, so either above it only makes absurd allocations.
MAX_IMAGE_PIXELS = Limits().max_image_pixels

# OPENAI_CLIP_MEAN / OPENAI_CLIP_STD: the Qwen2-VL and Qwen2.5-VL image statistics.
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)

# "composite": transformers' convert_to_rgb for PIL.Image input; "drop": Pillow's convert("RGB")
# (transformers' load_image, its chat path); "composite_rgba": qwen-vl-utils' to_rgb.
ALPHA_MODES = ("composite", "drop", "composite_rgba")
REQUIRED = PatchGridSpec.REQUIRED
DEFAULTS: dict[str, Any] = {**PatchGridSpec.DEFAULTS, **dict.fromkeys(VIDEO_FIELDS),
                            **dict.fromkeys(VISION_INFO_FIELDS)}


@attrs.frozen
class QwenVlSpec(PatchGridSpec):
    """A validated ``qwen_vl`` spec: the image fields of every Qwen2-VL-style family, the
    optional video and qwen-vl-utils groups. Build it with :func:`parse_spec`."""

    video: VideoSpec | None = None
    vision_info: VisionInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """The complete spec, ``"family"`` included, as JSON-ready values."""
        video, vision_info = self.video, self.vision_info
        return {"family": FAMILY, **self.image_fields(), **({} if video is None else video.to_dict()),
                **({} if vision_info is None else vision_info.to_dict())}


def parse_spec(params: Mapping[str, Any]) -> QwenVlSpec:
    """Validate the spec fields (without ``"family"``) into a :class:`QwenVlSpec`. ``backend``
    "pil" clones transformers' Qwen2VLImageProcessorPil, "torchvision" its Qwen2VLImageProcessor;
    the rules between fields: docs/families/qwen_vl.md, "Spec rules"."""
    f = SpecFields(FAMILY, params, required=REQUIRED, defaults=DEFAULTS)
    image = PatchGridSpec.read(f, max_image_pixels=MAX_IMAGE_PIXELS, alpha_modes=ALPHA_MODES,
                               pixels=PatchPixels.KINDS)
    spec = QwenVlSpec(**image, video=parse_video(f, params, image["image_token_id"]))
    spec = attrs.evolve(spec, vision_info=parse_vision_info(f, params, spec.factor, MAX_IMAGE_PIXELS))
    if spec.video is not None:
        check_pixels(f, spec.video, spec.factor)
    return spec


def _preset(
    image_token_id: int, patch_size: int, min_pixels: int, max_pixels: int, mean, std, video: VideoSpec
) -> dict[str, Any]:
    return QwenVlSpec(
        image_token_id=image_token_id,
        patch_size=patch_size,
        merge_size=2,
        temporal_patch_size=2,
        min_pixels=min_pixels,
        max_pixels=max_pixels,
        image_mean=mean,
        image_std=std,
        video=video,
    ).to_dict()


def _qwen2_video(min_pixels: int, max_pixels: int, tokens_per_second: int | None = None) -> VideoSpec:
    # Qwen2VLVideoProcessor samples no frames unless told to (do_sample_frames false).
    return VideoSpec("qwen2", 151656, min_pixels, max_pixels, False, tokens_per_second=tokens_per_second)


def _qwen3_video(video_token_id: int, start: int, end: int, timestamps) -> VideoSpec:
    # The published video_preprocessor_config.json: 4096 .. 768*32*32*32 pixels over all
    # sampled frames, 2 fps, 4 .. 768 frames.
    return VideoSpec("qwen3", video_token_id, 4096, 25165824, True, 2.0, 4, 768, None, start, end, timestamps)


QWEN2_HUB = 14 * 14 * 4 * 16384
# Each preset is a published checkpoint's preprocessor_config.json (the README's preset
# table names them), and its video processor as transformers builds it from the
# checkpoint: qwen2_vl Qwen/Qwen2-VL-7B-Instruct, qwen2_5_vl Qwen/Qwen2.5-VL-7B-Instruct
# (both 3136 .. 12845056 pixels: 16384 merged 28x28 blocks; they ship no video config, so
# video frames take the image bounds; Qwen2.5's config.json has tokens_per_second 2),
# qwen3_vl Qwen/Qwen3-VL-8B-Instruct and qwen3_5 Qwen/Qwen3.5-9B (their own
# video_preprocessor_config.json), whose vocabulary puts <|image_pad|> at 248056. Every
# size of a generation shares these values. qwen2_vl_class_defaults is transformers'
# Qwen2VLImageProcessor and Qwen2VLVideoProcessor with no config at all (max 1003520
# image pixels, 100352 .. 602112 per video frame): no checkpoint ships it; it stays for
# comparisons with code that builds the processors bare.
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2_vl": _preset(151655, 14, 56 * 56, QWEN2_HUB, CLIP_MEAN, CLIP_STD, _qwen2_video(56 * 56, QWEN2_HUB)),
    "qwen2_vl_class_defaults": _preset(
        151655, 14, 56 * 56, 28 * 28 * 1280, CLIP_MEAN, CLIP_STD, _qwen2_video(128 * 28 * 28, 28 * 28 * 768)
    ),
    "qwen2_5_vl": _preset(151655, 14, 56 * 56, QWEN2_HUB, CLIP_MEAN, CLIP_STD, _qwen2_video(56 * 56, QWEN2_HUB, 2)),
    "qwen3_vl": _preset(
        151655, 16, 65536, 16777216, HALF, HALF, _qwen3_video(151656, 151652, 151653, QWEN2_TIMESTAMPS)
    ),
    "qwen3_5": _preset(
        248056, 16, 65536, 16777216, HALF, HALF, _qwen3_video(248057, 248053, 248054, QWEN3_5_TIMESTAMPS)
    ),
}
