"""Resolve an ``inkling`` spec from a model's ``config.json`` + ``preprocessor_config.json``
as transformers 5.24 writes them (``InklingConfig``; ``InklingImageProcessor``'s and
``InklingFeatureExtractor``'s ``to_dict`` keys, plus ``InklingProcessor``'s dMel options).

Every preprocessor key feeds a spec field, is pinned to the one value the family
implements, is derived and checked, or is refused by name. Missing keys take the
transformers class defaults; note ``InklingImageProcessor.rescale_image_frac`` defaults to
``None`` (no rescale), unlike the family's own default of 2.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .audio import AUDIO_DEFAULTS
from .params import FAMILY, parse_spec

MODEL_TYPES = frozenset({"inkling_mm_model"})
CLASS_NAMES = {
    "image_processor_type": frozenset({"InklingImageProcessor"}),
    "feature_extractor_type": frozenset({"InklingFeatureExtractor"}),
    "processor_class": frozenset({"InklingProcessor"}),
}
# What the family's patchify implements: Pillow LANCZOS (resample 1), OPENAI CLIP mean/std.
PINNED: dict[str, Any] = {
    "do_convert_rgb": True, "resample": 1, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    "do_resize": True, "default_to_square": False, "padding_value": 0.0, "padding_side": "right",
    "return_attention_mask": True,
}
# Spec fields named as the transformers classes name them.
AUDIO_KEYS = tuple(k for k in AUDIO_DEFAULTS if k != "audio_token_id")
IMAGE_KEYS = {"size": {"height": 40, "width": 40}, "rescale_image_frac": None,
              "rescale_image_max_upscaled_long_edge": 2048}
DERIVED = ("hop_length", "window_size")
KNOWN = {*CLASS_NAMES, *PINNED, *AUDIO_KEYS, *IMAGE_KEYS, *DERIVED}
MODEL_DEFAULTS = {"image_token_id": 200054, "audio_token_id": AUDIO_DEFAULTS["audio_token_id"]}


def _patch_size(keys: mmp.ConfigKeys) -> Any:
    size = keys.values.get("size", IMAGE_KEYS["size"])
    if not isinstance(size, Mapping) or set(size) != {"height", "width"} or size["height"] != size["width"]:
        raise keys.error("size", f"must be a square object with exactly height and width, got {size!r}")
    return size["height"]


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for an Inkling model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned=PINNED, names=CLASS_NAMES)
    pp = keys.values
    frac = pp.get("rescale_image_frac", IMAGE_KEYS["rescale_image_frac"])
    cap = pp.get("rescale_image_max_upscaled_long_edge", IMAGE_KEYS["rescale_image_max_upscaled_long_edge"])
    # The processor applies the cap only to growth: without frac > 1 it has no effect.
    if not isinstance(frac, (int, float)) or isinstance(frac, bool) or frac <= 1:
        cap = None
    fields = {
        **{k: config.get(k, v) for k, v in MODEL_DEFAULTS.items()},
        "patch_size": _patch_size(keys),
        "rescale_frac": frac,
        "rescale_cap": cap,
        **{k: pp.get(k, AUDIO_DEFAULTS[k]) for k in AUDIO_KEYS},
    }
    spec = parse_spec(fields)
    _check_derived(keys, spec.audio)
    _check_model(config, spec.patch_size, spec.audio.fields()["feature_size"])
    return {"family": FAMILY, "patch_size": spec.patch_size, "rescale_frac": spec.rescale_frac,
            "rescale_cap": spec.rescale_cap, "image_token_id": spec.image_token_id, **spec.audio.fields()}


def _check_derived(keys: mmp.ConfigKeys, audio: Any) -> None:
    """``hop_length``/``window_size`` are recomputed by the extractor; a saved value must agree."""
    f = audio.fields()
    hop = round(f["audio_token_duration_s"] * f["sampling_rate"])
    expected = {"hop_length": hop, "window_size": round(hop * f["window_size_multiplier"])}
    keys.pinned(expected, "from audio_token_duration_s, sampling_rate and window_size_multiplier")


def _check_model(config: Mapping[str, Any], patch_size: int, feature_size: int) -> None:
    for name, key, want in (("vision_config", "patch_size", patch_size), ("audio_config", "n_mel_bins", feature_size)):
        got = mmp.ConfigKeys.section(config.get(name), f"config.json: {name!r}").get(key, want)
        if got != want:
            raise mmp.SpecError(f"config.json: {name}.{key}={got!r} disagrees with the preprocessor's {want!r}")
