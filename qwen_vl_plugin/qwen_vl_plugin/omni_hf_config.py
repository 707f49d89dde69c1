"""Resolve a ``qwen2_5_omni`` spec from a Qwen2.5-Omni model's ``config.json`` + ``preprocessor_config.json``.

The checkpoint's one ``preprocessor_config.json`` feeds both the image processor
(``Qwen2VLImageProcessor``: the keys :mod:`.hf_config` consumes) and the feature extractor
(``WhisperFeatureExtractor``); there is no video config, and the video frame bounds are
the processor's class default (:data:`.omni_spec.PRESETS`). Every key is consumed: it
feeds a field, must agree with the others (``n_samples``, ``nb_max_frames``), is pinned to
the one value implemented, or is inert; anything else is a ``SpecError`` naming it. The
token ids and ``position_id_per_seconds`` come from ``config.json``'s ``thinker_config``
(its class defaults when absent), whose vision and audio towers must agree with the
preprocessor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework.plugin import ConfigKeys, SpecError, whisper

from .hf_keys import PINNED
from .hf_config import CLASS_DEFAULTS as IMAGE_DEFAULTS, IMAGE_PROCESSOR_TYPES, VISION_KEYS
from .omni_av import SECONDS_PER_CHUNK
from .omni_spec import PRESETS, parse_omni_spec

MODEL_TYPES = ("qwen2_5_omni", "qwen2_5_omni_thinker")
NAMES = {"processor_class": {"Qwen2_5OmniProcessor"}, "feature_extractor_type": {"WhisperFeatureExtractor"},
         "image_processor_type": IMAGE_PROCESSOR_TYPES}
# Qwen2_5OmniThinkerConfig defaults (transformers 5.24) and the tokenizer's marker ids
# (<|vision_bos|>, <|vision_eos|>), which the thinker config of the hub checkpoint names.
THINKER_DEFAULTS = {"audio_token_index": 151646, "image_token_index": 151655, "video_token_index": 151656,
                    "audio_start_token_id": 151647, "audio_end_token_id": 151648, "vision_start_token_id": 151652,
                    "vision_end_token_id": 151653, "position_id_per_seconds": 25}
# Qwen2_5OmniAudioEncoderConfig.num_mel_bins; its max_source_positions bounds a 100-frame window
# (n_window), not the clip, so it constrains no preprocessor value.
AUDIO_MELS = 128
IMAGE_KEYS = set(IMAGE_DEFAULTS) | set(PINNED) | {"min_pixels", "max_pixels"}


def resolve(
    config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The spec dict for a Qwen2.5-Omni model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    if video_preprocessor_config is not None:
        raise SpecError("video_preprocessor_config.json: not supported by the qwen2_5_omni family (the published "
                        "checkpoints have none; their video processor is built from preprocessor_config.json)")
    known = IMAGE_KEYS | set(whisper.KEYS) | set(NAMES)
    keys = ConfigKeys("preprocessor_config.json", {} if preprocessor_config is None else preprocessor_config,
                      "qwen2_5_omni", known)
    keys.pinned(PINNED)
    keys.one_of(NAMES, nullable=True)
    settings = whisper.preprocessor_keys(keys)
    pp = keys.values
    min_pixels, max_pixels = ConfigKeys.qwen2_pixels(pp, IMAGE_DEFAULTS["size"], keys.error)
    thinker = ConfigKeys.section(config.get("thinker_config", config), "config.json: 'thinker_config'")
    ids = {k: thinker.get(k, v) for k, v in THINKER_DEFAULTS.items()}
    preset = PRESETS["qwen2_5_omni"]
    fields = {
        **{k: preset[k] for k in ("backend", "alpha", "exif_transpose", "video_processor", "video_min_pixels",
                                  "video_max_pixels", "video_sample_frames")},
        "image_token_id": ids["image_token_index"], "video_token_id": ids["video_token_index"],
        **{k: pp.get(k, IMAGE_DEFAULTS[k]) for k in ("patch_size", "merge_size", "temporal_patch_size",
                                                     "image_mean", "image_std")},
        "min_pixels": min_pixels, "max_pixels": max_pixels,
        **settings,
        "audio_token_id": ids["audio_token_index"],
        **{k: ids[k] for k in ("audio_start_token_id", "audio_end_token_id", "vision_start_token_id",
                               "vision_end_token_id", "position_id_per_seconds")},
    }
    spec = parse_omni_spec(fields)
    whisper.check_derived(keys, whisper.WhisperSettings.of(spec))
    _check_towers(thinker, spec)
    return spec.to_dict()


def _check_towers(thinker: Mapping[str, Any], spec: Any) -> None:
    vision = ConfigKeys.section(thinker.get("vision_config"), "config.json: thinker_config.vision_config")
    for key, field in VISION_KEYS.items():
        if key in vision and vision[key] != getattr(spec.vision, field):
            raise SpecError(f"config.json: thinker_config.vision_config.{key}={vision[key]!r} disagrees with the "
                            f"preprocessor's {field}={getattr(spec.vision, field)!r}")
    chunk = thinker.get("seconds_per_chunk", SECONDS_PER_CHUNK)
    if chunk != SECONDS_PER_CHUNK:
        # The processor's class attribute; the model's value must agree for ids and positions to pair.
        raise SpecError(f"config.json: thinker_config.seconds_per_chunk={chunk!r}: only the processor's "
                        f"{SECONDS_PER_CHUNK} is supported (use_audio_in_video chunks)")
    audio = ConfigKeys.section(thinker.get("audio_config"), "config.json: thinker_config.audio_config")
    mels = audio.get("num_mel_bins", AUDIO_MELS)
    if mels != spec.feature_size:
        raise SpecError(f"config.json: thinker_config.audio_config.num_mel_bins={mels!r} disagrees with the "
                        f"preprocessor's feature_size {spec.feature_size}")
