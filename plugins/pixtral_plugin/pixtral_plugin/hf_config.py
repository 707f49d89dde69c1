"""Resolve a ``pixtral`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Ours: ``model_type`` ``"mistral3"`` (Mistral Small 3.1 and later), ``"llava"`` whose
``vision_config.model_type`` is ``"pixtral"`` (Pixtral-12B), or ``"pixtral"`` itself (a
``PixtralVisionConfig``: the vision tower alone, no spatial merge, which transformers pairs
with the bare ``PixtralImageProcessor``: what ``mm_framework.hf`` resolves it as, so its
sides are multiples of its own ``patch_size``). Anything else answers ``None`` so other
plugins are asked.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field,
is pinned to the one value implemented exactly, or is inert for the PIL backend
(serialisation defaults such as ``"data_format": "channels_first"``); any other key or
value is a ``SpecError`` naming it. Missing keys take the transformers 5.24
``PixtralImageProcessorPil`` class defaults, as ``from_pretrained`` would.

From ``config.json``: ``image_token_index`` (``[IMG]``), ``spatial_merge_size`` (Mistral 3;
Pixtral-12B has none: 1) and ``vision_config.patch_size`` (a ``pixtral`` config's own
``patch_size``), which must agree with the preprocessor's ``patch_size``. ``[IMG_BREAK]`` and
``[IMG_END]`` appear in no config: they are 12 and 13 in Mistral's fixed special-token table,
the same in every Tekken and SentencePiece vocabulary with image tokens
(docs/families/pixtral.md §8); a ``pixtral`` config has no ``[IMG]`` either: 10, from the
same table.

The resolved spec uses ``backend="pil"`` and decodes like transformers' ``PIL.Image``
entry (alpha composited on white, no EXIF transpose), whatever ``image_processor_type``
says: ``AutoImageProcessor`` picks PIL or torchvision by what is installed, so the config
does not pin a backend, and the PIL one is the deterministic reference (the torchvision
class has the same defaults; ``"backend": "torchvision"`` mirrors it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .spec import CLIP_MEAN, CLIP_STD, parse_spec

IMAGE_ID, IMAGE_BREAK_ID, IMAGE_END_ID = 10, 12, 13
IMAGE_PROCESSOR_TYPES = frozenset({"PixtralImageProcessor", "PixtralImageProcessorFast", "PixtralImageProcessorPil"})
PROCESSOR_CLASSES = frozenset({"PixtralProcessor"})

# Keys pinned to the single value implemented (PILImageResampling.BICUBIC is 3).
PINNED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
    "do_pad": True,
    "default_to_square": True,
    "rescale_factor": 1 / 255,
    "resample": 3,
}
# Keys that change nothing in the PIL backend at these values (they are what
# save_pretrained writes for "unset").
INERT: dict[str, Any] = {
    "data_format": "channels_first",
    "input_data_format": None,
    "device": None,
    "return_tensors": None,
    "do_center_crop": None,
    "crop_size": None,
    "disable_grouping": None,
    "pad_size": None,
    "image_seq_length": None,
}
# transformers 5.24 PixtralImageProcessorPil class defaults.
CLASS_DEFAULTS: dict[str, Any] = {
    "patch_size": {"height": 16, "width": 16},
    "size": {"longest_edge": 1024},
    "image_mean": list(CLIP_MEAN),
    "image_std": list(CLIP_STD),
}
NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": PROCESSOR_CLASSES}
CONSUMED = {*NAMES, *PINNED, *INERT, *CLASS_DEFAULTS}


def _cfg_error(key: str, message: str) -> mmp.SpecError:
    return mmp.SpecError(f"config.json: {key!r} {message}")


def _is_ours(config: Mapping[str, Any]) -> bool:
    model_type = config.get("model_type")
    if model_type in ("mistral3", "pixtral"):
        return True
    vision = config.get("vision_config")
    return model_type == "llava" and isinstance(vision, Mapping) and vision.get("model_type") == "pixtral"


def _patch_size(keys: mmp.ConfigKeys) -> Any:
    """The preprocessor's square patch side: ``16`` or ``{"height": 16, "width": 16}``."""
    value = keys.values.get("patch_size", CLASS_DEFAULTS["patch_size"])
    if isinstance(value, Mapping):
        if set(value) != {"height", "width"} or value["height"] != value["width"]:
            raise keys.error("patch_size", f"must be a square {{'height', 'width'}} or a number, got {value!r}")
        return value["height"]
    return value


def _longest_edge(keys: mmp.ConfigKeys) -> Any:
    size = keys.values.get("size", CLASS_DEFAULTS["size"])
    if not isinstance(size, Mapping) or set(size) != {"longest_edge"}:
        raise keys.error("size", f"must be {{'longest_edge': N}} (the only form implemented), got {size!r}")
    return size["longest_edge"]


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for a Pixtral / Mistral 3 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or not _is_ours(config):
        return None
    keys = mmp.ConfigKeys("preprocessor_config.json", preprocessor_config, "pixtral", CONSUMED)
    keys.pinned(PINNED)
    keys.pinned(INERT, "the only value without effect")
    keys.one_of(NAMES, nullable=False)
    pp = keys.values

    tower = config["model_type"] == "pixtral"
    vision = config if tower else config.get("vision_config", {})
    if not isinstance(vision, Mapping):
        raise _cfg_error("vision_config", f"must be an object, got {vision!r}")
    patch = _patch_size(keys)
    if "patch_size" in vision and vision["patch_size"] != patch:
        raise _cfg_error(
            "patch_size" if tower else "vision_config.patch_size",
            f"={vision['patch_size']!r} disagrees with the preprocessor's patch_size={patch!r}",
        )
    if config["model_type"] == "mistral3":
        # Mistral3Config: image_token_index (alias image_token_id) 10, spatial_merge_size 2.
        image_token = config.get("image_token_index", config.get("image_token_id", 10))
        merge = config.get("spatial_merge_size", 2)
    elif tower:
        image_token, merge = IMAGE_ID, 1
    else:
        # LlavaConfig's default image_token_index (32000) belongs to CLIP LLaVA, not to a
        # Tekken vocabulary: require the key.
        if "image_token_index" not in config:
            raise _cfg_error("image_token_index", "is required for a llava model with a pixtral vision tower")
        image_token = config["image_token_index"]
        merge = 1
    fields = {
        "image_token_id": image_token,
        "image_break_token_id": IMAGE_BREAK_ID,
        "image_end_token_id": IMAGE_END_ID,
        "patch_size": patch,
        "spatial_merge_size": merge,
        "longest_edge": _longest_edge(keys),
        "image_mean": pp.get("image_mean", CLASS_DEFAULTS["image_mean"]),
        "image_std": pp.get("image_std", CLASS_DEFAULTS["image_std"]),
    }
    return parse_spec(fields).to_dict()
