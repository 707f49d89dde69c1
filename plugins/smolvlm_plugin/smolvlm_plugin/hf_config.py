"""Resolve a ``smolvlm`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, names a class, or (``video_sampling``, read only by the
video processor) is inert for images; anything else is refused by name. Missing keys take
the transformers 5.24 defaults ``from_pretrained`` would use, the class attributes of
``Idefics3ImageProcessorPil`` (equal to ``SmolVLMImageProcessorPil``'s).

Two values live outside these files, so they come from the model: ``image_seq_len``
(``processor_config.json``) is what the model consumes per tile,
``(vision image_size // patch_size) ** 2 / scale_factor ** 2`` (the processor's own
docstring formula); the tokenizer's marker and newline ids come from the published
vocabulary that ``image_token_id`` identifies (SmolLM2's 49190, Llama 3's 128257). A model
with another vocabulary is refused naming ``image_token_id``: write its spec by hand.
The variant is ``processor_class`` when the file names one, else the model type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY, PRESETS, parse_spec

MODEL_TYPES = {"idefics3": "idefics3", "smolvlm": "smolvlm"}
PROCESSORS = {"Idefics3Processor": "idefics3", "SmolVLMProcessor": "smolvlm"}
IMAGE_PROCESSOR_TYPES = frozenset(f"{m}ImageProcessor{s}" for m in ("Idefics3", "SmolVLM") for s in ("", "Fast", "Pil"))
CLASS_NAMES = {"image_processor_type": IMAGE_PROCESSOR_TYPES, "processor_class": frozenset(PROCESSORS)}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# Keys pinned to the single value implemented (RGB conversion; a single prompt pads nothing
# because every frame is one tile, but the mask is only defined with padding on).
PINNED: dict[str, Any] = {"do_convert_rgb": True, "do_pad": True}
# Idefics3ImageProcessorPil's class attributes.
CLASS_DEFAULTS: dict[str, Any] = {
    "do_resize": True,
    "size": {"longest_edge": 4 * 364},
    "max_image_size": {"longest_edge": 364},
    "resample": 1,
    "do_image_splitting": True,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}
# Read only by SmolVLMVideoProcessor; the family processes images.
INERT = ("video_sampling",)
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES, *INERT}
# Idefics3Config / SmolVLMConfig and their vision configs' defaults.
MODEL_DEFAULTS = {"image_token_id": 128257, "scale_factor": 2, "image_size": 224, "patch_size": 32}
# image_token_id -> the published tokenizer's ids (the presets': docs/families/smolvlm.md §1).
_TOKENIZER_FIELDS = ("fake_image_token_id", "global_image_token_id", "row_col_token_ids", "newline_token_id",
                     "double_newline_ids")
TOKENIZERS = {
    PRESETS[p]["image_token_id"]: {k: PRESETS[p][k] for k in _TOKENIZER_FIELDS}
    for p in ("smolvlm_256m_instruct", "idefics3_8b_llama3")
}


def _longest_edge(keys: mmp.ConfigKeys, key: str) -> Any:
    value = keys.values.get(key, CLASS_DEFAULTS[key])
    if not isinstance(value, Mapping) or set(value) != {"longest_edge"}:
        raise keys.error(key, f"must be an object with exactly longest_edge, got {value!r}")
    return value["longest_edge"]


def _image_seq_len(config: Mapping[str, Any], vision: Mapping[str, Any]) -> int:
    side, patch = (vision.get(k, MODEL_DEFAULTS[k]) for k in ("image_size", "patch_size"))
    scale = config.get("scale_factor", MODEL_DEFAULTS["scale_factor"])
    for name, v in (("vision_config.image_size", side), ("vision_config.patch_size", patch), ("scale_factor", scale)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise mmp.SpecError(f"config.json: {name} must be a positive integer, got {v!r}")
    return int(((side // patch) ** 2) / (scale**2))


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec dict for an Idefics3 or SmolVLM model, or ``None`` when the model is neither."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    keys = mmp.ConfigKeys("preprocessor_config.json", preprocessor_config, FAMILY, KNOWN)
    keys.pinned(PINNED)
    keys.one_of(CLASS_NAMES, nullable=True)
    pp = keys.values
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (Pillow LANCZOS, BILINEAR, BICUBIC), "
                                     f"got {resample!r}")
    vision = mmp.ConfigKeys.section(config.get("vision_config"), "config.json: 'vision_config'")
    image_token_id = config.get("image_token_id", MODEL_DEFAULTS["image_token_id"])
    tokenizer = TOKENIZERS.get(image_token_id) if isinstance(image_token_id, int) else None
    if tokenizer is None:
        raise mmp.SpecError(
            f"config.json: 'image_token_id'={image_token_id!r} is not one of the published vocabularies "
            f"({', '.join(map(str, sorted(TOKENIZERS)))}) whose marker and newline ids the smolvlm family knows; "
            "write the spec with the tokenizer's ids by hand")
    tile = _longest_edge(keys, "max_image_size")
    side = vision.get("image_size")
    if side is not None and side != tile:
        raise keys.error("max_image_size", f"={{'longest_edge': {tile!r}}} disagrees with config.json "
                                           f"vision_config.image_size={side!r} (the tower's input is one tile)")
    processor = pp.get("processor_class")
    fields = {
        "variant": PROCESSORS[processor] if processor else MODEL_TYPES[config["model_type"]],
        "image_token_id": image_token_id,
        **tokenizer,
        "image_seq_len": _image_seq_len(config, vision),
        "size_longest_edge": _longest_edge(keys, "size"),
        "max_image_size": tile,
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("do_resize", "do_image_splitting", "do_rescale",
                                                     "rescale_factor", "do_normalize", "image_mean", "image_std")},
    }
    return parse_spec(fields).to_dict()
