"""Resolve an ``intern_vl`` spec from an ``-hf`` InternVL checkpoint's ``config.json`` +
``preprocessor_config.json`` (transformers' ``InternVLForConditionalGeneration`` with
``InternVLProcessor`` and ``GotOcr2ImageProcessor``, e.g. ``OpenGVLab/InternVL3-1B-hf``).

Ours: ``model_type`` ``"internvl"``; anything else (the remote-code ``"internvl_chat"``
checkpoints among them) answers ``None``. The spec has ``processor: "transformers"``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented exactly, or is inert for the PIL backend; any other key
or value is a ``SpecError`` naming it. Missing keys take the transformers 5.24
``GotOcr2ImageProcessorPil`` class defaults, as ``from_pretrained`` would.

From ``config.json``: ``image_token_id`` (``<IMG_CONTEXT>``, InternVLConfig's default
151667), ``downsample_ratio`` (0.5), ``vision_config.image_size`` and ``patch_size``
(``[448, 448]``, ``[14, 14]``), giving ``num_image_token = (image_size // patch)**2 *
downsample_ratio**2``, which must equal ``image_seq_length`` where the config has it. ``<img>``
and ``</img>`` appear in no config: they are the two ids before ``<IMG_CONTEXT>`` in both
InternVL vocabularies (InternLM2.5: 92544, 92545, 92546; Qwen2.5: 151665, 151666, 151667,
added in that order by transformers' conversion script); another ``image_token_id`` is a
``SpecError``, since its vocabulary's markers are unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .spec import parse_spec

# <IMG_CONTEXT> -> (<img>, </img>) in the InternVL vocabularies.
MARKERS = {92546: (92544, 92545), 151667: (151665, 151666)}
IMAGE_PROCESSOR_TYPES = frozenset({"GotOcr2ImageProcessor", "GotOcr2ImageProcessorFast", "GotOcr2ImageProcessorPil"})
PROCESSOR_CLASSES = frozenset({"InternVLProcessor"})

# Keys pinned to the single value implemented (PILImageResampling.BICUBIC is 3).
PINNED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
    "rescale_factor": 1 / 255,
    "resample": 3,
    "min_patches": 1,
}
# Keys without effect in the PIL backend at these values (what save_pretrained writes for
# "unset"); crop_to_patches is InternVLProcessor's to set (its images_kwargs default, True,
# overrides the image processor's own value).
INERT: dict[str, Any] = {
    "data_format": "channels_first",
    "default_to_square": True,
    "input_data_format": None,
    "device": None,
    "return_tensors": None,
    "do_center_crop": None,
    "crop_size": None,
    "disable_grouping": None,
    "pad_size": None,
    "do_pad": None,
}
# transformers 5.24 GotOcr2ImageProcessorPil class defaults (CLIP statistics, 384 tiles).
CLASS_DEFAULTS: dict[str, Any] = {
    "size": {"height": 384, "width": 384},
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "max_patches": 12,
}
NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": PROCESSOR_CLASSES}
CONSUMED = {*NAMES, "crop_to_patches", *PINNED, *INERT, *CLASS_DEFAULTS}


def _cfg_error(key: str, message: str) -> mmp.SpecError:
    return mmp.SpecError(f"config.json: {key!r} {message}")


def _square(value: Any, where: str, error: Any) -> int:
    """A square side given as ``N``, ``[N, N]`` or ``{"height": N, "width": N}``."""
    if isinstance(value, Mapping) and set(value) == {"height", "width"} and value["height"] == value["width"]:
        value = value["height"]
    elif isinstance(value, (list, tuple)) and len(value) == 2 and value[0] == value[1]:
        value = value[0]
    if not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        raise error(where, f"must be a square size (a positive integer side), got {value!r}")
    return value


def _check_preprocessor(preprocessor_config: Any) -> mmp.ConfigKeys:
    keys = mmp.ConfigKeys("preprocessor_config.json", preprocessor_config, "intern_vl", CONSUMED)
    keys.pinned(PINNED)
    keys.pinned(INERT, "the only value without effect")
    keys.boolean("crop_to_patches")
    keys.one_of(NAMES, nullable=False)
    return keys


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for an ``-hf`` InternVL model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") != "internvl":
        return None
    keys = _check_preprocessor(preprocessor_config)
    pp = keys.values

    vision = config.get("vision_config", {})
    if not isinstance(vision, Mapping):
        raise _cfg_error("vision_config", f"must be an object, got {vision!r}")
    tile = _square(pp.get("size", CLASS_DEFAULTS["size"]), "size", keys.error)
    image_size = _square(vision.get("image_size", [448, 448]), "vision_config.image_size", _cfg_error)
    if image_size != tile:
        raise _cfg_error("vision_config.image_size", f"={image_size} disagrees with the preprocessor's size={tile}")
    patch = _square(vision.get("patch_size", [14, 14]), "vision_config.patch_size", _cfg_error)
    ratio = config.get("downsample_ratio", 0.5)
    if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 < ratio <= 1):
        raise _cfg_error("downsample_ratio", f"must be a number in (0, 1], got {ratio!r}")
    tokens = (image_size // patch) ** 2 * ratio**2
    if tokens != int(tokens) or tokens < 1:
        raise _cfg_error("downsample_ratio", f"gives {tokens} tokens per tile, not a whole positive number")
    seq = config.get("image_seq_length", int(tokens))
    if seq != int(tokens):
        raise _cfg_error("image_seq_length", f"={seq!r} disagrees with (image_size // patch_size)**2 * "
                                             f"downsample_ratio**2 = {int(tokens)}")
    context = config.get("image_token_id", 151667)
    if context not in MARKERS:
        raise _cfg_error("image_token_id", f"={context!r} is not <IMG_CONTEXT> of a known InternVL vocabulary "
                                           f"({sorted(MARKERS)}): its <img> and </img> ids are unknown")
    start, end = MARKERS[context]
    fields = {
        "image_token_id": context,
        "img_context_token_id": context,
        "img_start_token_id": start,
        "img_end_token_id": end,
        "image_size": image_size,
        "num_image_token": int(tokens),
        "max_num": pp.get("max_patches", CLASS_DEFAULTS["max_patches"]),
        "image_mean": pp.get("image_mean", CLASS_DEFAULTS["image_mean"]),
        "image_std": pp.get("image_std", CLASS_DEFAULTS["image_std"]),
        "processor": "transformers",
    }
    return parse_spec(fields).to_dict()

