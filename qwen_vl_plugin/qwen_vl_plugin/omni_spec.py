"""The ``qwen2_5_omni`` spec: Qwen2.5-Omni's thinker preprocessing (docs/families/qwen2_5_omni.md).

A spec is the ``qwen_vl`` image and video fields (the Omni processor's image and video
processors are Qwen2-VL's; ``video_processor`` must be ``"qwen2"``, without
``tokens_per_second``, which is Qwen2.5-VL's) plus the fields of this module: the
``WhisperFeatureExtractor`` settings, the audio and marker token ids and the model's
``position_id_per_seconds``. The vision fields are validated by :func:`.spec.parse_spec`,
the others by their own :class:`SpecFields` reader, so every failure is a ``SpecError``
naming its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework.plugin import SpecError, SpecFields, whisper

from .spec import CLIP_MEAN, CLIP_STD, QwenVlSpec, parse_spec

FAMILY = "qwen2_5_omni"

OMNI_REQUIRED = (
    "audio_token_id", "audio_start_token_id", "audio_end_token_id", "vision_start_token_id", "vision_end_token_id",
    "feature_size", "sampling_rate", "n_fft", "hop_length", "chunk_length", "position_id_per_seconds",
)
# Off unless set; written by to_dict only when set, so specs from before it read the same.
# True: a video interleaves with its own audio track (docs/families/qwen2_5_omni.md §7).
OMNI_DEFAULTS = {"use_audio_in_video": False}
# Whisper's chunk is padded to chunk_length seconds whatever the clip holds (Qwen2.5-Omni's
# is 300 s): an hour bounds the per-item buffers.
MAX_CHUNK_SECONDS = 3600
# The processor's second_per_grid is temporal_patch_size / fps with fps 2.0 unless the
# call passes one (processing_qwen2_5_omni.py, _process_videos).
DEFAULT_FPS = 2.0


@attrs.frozen
class OmniSpec:
    """A validated ``qwen2_5_omni`` spec. Build it with :func:`parse_omni_spec`."""

    vision: QwenVlSpec
    audio_token_id: int
    audio_start_token_id: int
    audio_end_token_id: int
    vision_start_token_id: int
    vision_end_token_id: int
    feature_size: int
    sampling_rate: int
    n_fft: int
    hop_length: int
    chunk_length: int
    position_id_per_seconds: int
    use_audio_in_video: bool = False

    @property
    def second_per_grid(self) -> float:
        """The processor's ``video_second_per_grid`` (a Python float, float64 in its output)."""
        fps = self.vision.video.fps if self.vision.video.fps is not None else DEFAULT_FPS
        return self.vision.temporal_patch_size / fps

    def to_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self, recurse=False)
        vision = d.pop("vision").to_dict()
        vision.pop("family")
        if not d["use_audio_in_video"]:
            del d["use_audio_in_video"]
        return {"family": FAMILY, **vision, **d}


def parse_omni_spec(params: Mapping[str, Any]) -> OmniSpec:
    """Validate the spec fields (without ``"family"``) into an :class:`OmniSpec`."""
    if not isinstance(params, Mapping):
        raise SpecError(f"{FAMILY} spec: expected a mapping of fields, got {type(params).__name__}")
    own = {k: v for k, v in params.items() if k in OMNI_REQUIRED or k in OMNI_DEFAULTS}
    vision = parse_spec({k: v for k, v in params.items() if k not in own})
    f = SpecFields(FAMILY, own, required=OMNI_REQUIRED, defaults=OMNI_DEFAULTS)
    if vision.video is None or vision.video.processor != "qwen2" or vision.video.tokens_per_second is not None:
        raise f.error("video_processor", "must be 'qwen2' without tokens_per_second (Qwen2.5-Omni's video "
                                         "processor is Qwen2VLVideoProcessor)")
    settings = whisper.WhisperSettings.read(f, max_chunk_seconds=MAX_CHUNK_SECONDS)
    spec = OmniSpec(
        vision=vision,
        audio_token_id=f.integer("audio_token_id", minimum=0, maximum=2**31 - 1),
        audio_start_token_id=f.integer("audio_start_token_id", minimum=0, maximum=2**31 - 1),
        audio_end_token_id=f.integer("audio_end_token_id", minimum=0, maximum=2**31 - 1),
        vision_start_token_id=f.integer("vision_start_token_id", minimum=0, maximum=2**31 - 1),
        vision_end_token_id=f.integer("vision_end_token_id", minimum=0, maximum=2**31 - 1),
        **attrs.asdict(settings),
        position_id_per_seconds=f.integer("position_id_per_seconds", minimum=1),
        use_audio_in_video=f.boolean("use_audio_in_video"),
    )
    _check_distinct(f, spec)
    return spec


def _check_distinct(f: SpecFields, s: OmniSpec) -> None:
    # Items and their markers are found by these ids: two roles on one id cannot be laid out.
    roles = {"image_token_id": s.vision.image_token_id, "video_token_id": s.vision.video.token_id,
             "audio_token_id": s.audio_token_id, "audio_start_token_id": s.audio_start_token_id,
             "audio_end_token_id": s.audio_end_token_id, "vision_start_token_id": s.vision_start_token_id,
             "vision_end_token_id": s.vision_end_token_id}
    seen: dict[int, str] = {}
    for name, value in roles.items():
        if value in seen:
            raise f.error(name, f"must differ from {seen[value]!r} (both are {value})")
        seen[value] = name


# Qwen/Qwen2.5-Omni-7B (and -3B, which ships the same processor files):
# preprocessor_config.json's image and WhisperFeatureExtractor settings, config.json's
# thinker token ids and position_id_per_seconds, and the video bounds Qwen2_5OmniProcessor
# passes its video processor by default (its class attribute videos_kwargs, 128..768
# merged 28x28 blocks per frame, which override the video processor's own; measured with
# the processor, docs/families/qwen2_5_omni.md section 2). The model directory and its
# sources: tests/golden_omni/models/qwen2_5-omni-7b (SOURCES.md there).
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2_5_omni": {
        "family": FAMILY,
        "image_token_id": 151655, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2,
        "min_pixels": 3136, "max_pixels": 12845056, "image_mean": list(CLIP_MEAN), "image_std": list(CLIP_STD),
        "backend": "pil", "alpha": "composite", "exif_transpose": False,
        "video_processor": "qwen2", "video_token_id": 151656, "video_min_pixels": 128 * 28 * 28,
        "video_max_pixels": 768 * 28 * 28, "video_sample_frames": False,
        "audio_token_id": 151646, "audio_start_token_id": 151647, "audio_end_token_id": 151648,
        "vision_start_token_id": 151652, "vision_end_token_id": 151653,
        "feature_size": 128, "sampling_rate": 16000, "n_fft": 400, "hop_length": 160, "chunk_length": 300,
        "position_id_per_seconds": 25,
    },
}
