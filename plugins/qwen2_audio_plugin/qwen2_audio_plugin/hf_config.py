"""Resolve a ``qwen2_audio`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Every preprocessor key is consumed: it feeds a spec field, must agree with the fields
(``n_samples``, ``nb_max_frames``), is pinned to the one value implemented, or is inert
(``return_attention_mask``: ``Qwen2AudioProcessor`` forces it on); any other key or
value is a ``SpecError`` naming it. Missing keys take transformers 5.24's class defaults
(``WhisperFeatureExtractor``, ``Qwen2AudioConfig``), as ``from_pretrained`` would. From
``config.json``: ``audio_token_index`` and the audio tower's ``num_mel_bins`` and
``max_source_positions``, which must agree with the features (the tower refuses inputs of
another length).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .spec import FAMILY, parse_spec

MODEL_TYPE = "qwen2_audio"
FEATURE_EXTRACTOR_TYPES = frozenset({"WhisperFeatureExtractor"})
PROCESSOR_CLASSES = frozenset({"Qwen2AudioProcessor"})

NAMES = {"feature_extractor_type": FEATURE_EXTRACTOR_TYPES, "processor_class": PROCESSOR_CLASSES}
# Qwen2AudioConfig / Qwen2AudioEncoderConfig defaults.
CONFIG_DEFAULTS = {"audio_token_index": 151646}
AUDIO_DEFAULTS = {"num_mel_bins": 128, "max_source_positions": 1500}


def _audio_config(config: Mapping[str, Any]) -> dict[str, Any]:
    audio = mmp.ConfigKeys.section(config.get("audio_config"), "config.json: 'audio_config'")
    out = {k: audio.get(k, v) for k, v in AUDIO_DEFAULTS.items()}
    for k, v in out.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise mmp.SpecError(f"config.json: audio_config.{k} must be a positive integer, got {v!r}")
    return out


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Qwen2-Audio model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") != MODEL_TYPE:
        return None
    keys = mmp.ConfigKeys("preprocessor_config.json", preprocessor_config, FAMILY, [*mmp.whisper.KEYS, *NAMES])
    keys.one_of(NAMES, nullable=True)
    whisper = mmp.whisper.preprocessor_keys(keys)
    token = config.get("audio_token_index", CONFIG_DEFAULTS["audio_token_index"])
    if "audio_token_id" in config and config["audio_token_id"] != token:
        raise mmp.SpecError("config.json: 'audio_token_id' disagrees with 'audio_token_index'")
    spec = parse_spec({"audio_token_id": token, **whisper})
    mmp.whisper.check_derived(keys, mmp.whisper.WhisperSettings.of(spec))
    frames = spec.chunk_length * spec.sampling_rate // spec.hop_length
    audio = _audio_config(config)
    if audio["num_mel_bins"] != spec.feature_size:
        raise mmp.SpecError(
            f"config.json: audio_config.num_mel_bins={audio['num_mel_bins']} disagrees with the preprocessor's "
            f"feature_size {spec.feature_size}"
        )
    if 2 * audio["max_source_positions"] != frames:
        raise mmp.SpecError(
            f"config.json: audio_config.max_source_positions={audio['max_source_positions']} needs "
            f"{2 * audio['max_source_positions']} mel frames, the preprocessor gives {frames}"
        )
    return spec.to_dict()
