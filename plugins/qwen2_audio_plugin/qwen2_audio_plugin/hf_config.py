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

# WhisperFeatureExtractor.__init__ defaults, under their preprocessor_config.json names.
CLASS_DEFAULTS: dict[str, Any] = {
    "feature_size": 80,
    "sampling_rate": 16000,
    "hop_length": 160,
    "chunk_length": 30,
    "n_fft": 400,
}
# Keys pinned to the single value implemented.
PINNED: dict[str, Any] = {
    "padding_value": 0.0,
    "padding_side": "right",
    # Dithering adds random noise to every frame; only the deterministic extractor is cloned.
    "dither": 0.0,
}
INERT = ("return_attention_mask",)
DERIVED = ("n_samples", "nb_max_frames")
NAMES = ("feature_extractor_type", "processor_class")
# Qwen2AudioConfig / Qwen2AudioEncoderConfig defaults.
CONFIG_DEFAULTS = {"audio_token_index": 151646}
AUDIO_DEFAULTS = {"num_mel_bins": 128, "max_source_positions": 1500}


def _err(key: str, message: str) -> mmp.SpecError:
    return mmp.SpecError(f"preprocessor_config.json: {key!r} {message}")


def _same(value: Any, pinned: Any) -> bool:
    # bool is an int in Python, and 0 == 0.0: compare the JSON types too.
    return type(value) is type(pinned) and value == pinned


def _check_preprocessor_keys(pp: Mapping[str, Any]) -> None:
    known = set(CLASS_DEFAULTS) | set(PINNED) | set(INERT) | set(DERIVED) | set(NAMES)
    for key in pp:
        if key not in known:
            raise _err(key, f"is not supported by the {FAMILY} family")
    for key, pinned in PINNED.items():
        if key in pp and not (_same(pp[key], pinned) or (isinstance(pinned, float) and _same(pp[key], int(pinned)))):
            raise _err(key, f"must be {pinned!r} (the only value implemented), got {pp[key]!r}")
    if "return_attention_mask" in pp and not isinstance(pp["return_attention_mask"], bool):
        raise _err("return_attention_mask", f"must be a boolean, got {pp['return_attention_mask']!r}")
    for key, allowed in (("feature_extractor_type", FEATURE_EXTRACTOR_TYPES), ("processor_class", PROCESSOR_CLASSES)):
        if pp.get(key) is not None and pp[key] not in allowed:
            raise _err(key, f"must be one of {sorted(allowed)}, got {pp[key]!r}")


def _audio_config(config: Mapping[str, Any]) -> dict[str, Any]:
    audio = config.get("audio_config") or {}
    if not isinstance(audio, Mapping):
        raise mmp.SpecError(f"config.json: 'audio_config' must be an object, got {audio!r}")
    out = {k: audio.get(k, v) for k, v in AUDIO_DEFAULTS.items()}
    for k, v in out.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise mmp.SpecError(f"config.json: audio_config.{k} must be a positive integer, got {v!r}")
    return out


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Qwen2-Audio model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") != MODEL_TYPE:
        return None
    if not isinstance(preprocessor_config, Mapping):
        raise mmp.SpecError(f"preprocessor_config.json: expected an object, got {type(preprocessor_config).__name__}")
    pp = dict(preprocessor_config)
    _check_preprocessor_keys(pp)
    token = config.get("audio_token_index", CONFIG_DEFAULTS["audio_token_index"])
    if "audio_token_id" in config and config["audio_token_id"] != token:
        raise mmp.SpecError("config.json: 'audio_token_id' disagrees with 'audio_token_index'")
    spec = parse_spec({"audio_token_id": token, **{k: pp.get(k, v) for k, v in CLASS_DEFAULTS.items()}})
    n_samples = spec.chunk_length * spec.sampling_rate
    frames = n_samples // spec.hop_length
    # The extractor recomputes both from the fields and ignores the saved values; a file
    # whose values disagree was written for other fields.
    for key, want in (("n_samples", n_samples), ("nb_max_frames", frames)):
        if key in pp and not _same(pp[key], want):
            raise _err(key, f"must be {want} (from chunk_length, sampling_rate and hop_length), got {pp[key]!r}")
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
