"""Resolve a ``smolvlm`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, or names a class; anything else is refused by name.
SmolVLM's video sampler settings (``video_sampling``, ``do_sample_frames``, ...) come from
``video_preprocessor_config.json`` when the model has one, else from
``preprocessor_config.json`` (as transformers falls back); a video file's image values must
equal the image processor's. The ``<video>`` id is the tokenizer's, so video stays off
(``video_token_id``) until a deployment adds it. Missing keys take
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
# Read only by SmolVLMVideoProcessor (§7): the sampler's settings.
VIDEO_KEYS = ("video_sampling", "do_sample_frames", "num_frames", "fps")
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES, *VIDEO_KEYS}
VIDEO_PROCESSOR_TYPES = frozenset({"SmolVLMVideoProcessor"})
# A video_preprocessor_config.json shares the image fields (the family's video reads them): the
# values it states must equal the image processor's, as must those of SmolVLMVideoProcessor's
# class attributes it leaves out (size and max_image_size are the published ones').
VIDEO_CLASS_DEFAULTS: dict[str, Any] = {**CLASS_DEFAULTS, "do_image_splitting": False}
VIDEO_KNOWN = {*PINNED, *VIDEO_CLASS_DEFAULTS, *VIDEO_KEYS, "video_processor_type", "processor_class"}
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


def _video_fields(keys: mmp.ConfigKeys, size: Any) -> dict[str, Any]:
    """The sampler's spec fields from a video processor config (``SmolVLMVideoProcessor.__init__``:
    ``video_sampling``'s ``fps`` and ``max_frames`` win over top-level ``fps``/``num_frames``;
    its ``video_size`` is the frames' longest edge unless the file has ``size``)."""
    v = keys.values
    fields: dict[str, Any] = {"video_do_sample_frames": v.get("do_sample_frames", False)}
    sampling = v.get("video_sampling")
    if sampling is not None:
        if not isinstance(sampling, Mapping) or not set(sampling) <= {"fps", "max_frames", "video_size"}:
            raise keys.error("video_sampling", f"must be an object of fps, max_frames and video_size, got {sampling!r}")
        fps, frames = sampling.get("fps", v.get("fps")), sampling.get("max_frames", v.get("num_frames"))
        if "size" not in v and "video_size" in sampling:
            video_size = sampling["video_size"]
            if not isinstance(video_size, Mapping) or set(video_size) != {"longest_edge"}:
                raise keys.error("video_sampling", f"video_size must be {{'longest_edge': n}}, got {video_size!r}")
            if video_size["longest_edge"] != size:
                fields["video_size_longest_edge"] = video_size["longest_edge"]
    else:
        fps, frames = v.get("fps"), v.get("num_frames")
    if fps is not None:
        fields["video_fps"] = fps
    if frames is not None:
        fields["video_num_frames"] = frames
    if fields["video_do_sample_frames"] and (fps is None or frames is None):
        raise keys.error("do_sample_frames", "samples frames but the file sets no fps or max frames "
                                             "(SmolVLMVideoProcessor has no defaults for them)")
    return fields


def _check_video_config(video: Mapping[str, Any], pp: Mapping[str, Any]) -> mmp.ConfigKeys:
    """A ``video_preprocessor_config.json``'s keys: every shared value equal to the image one."""
    keys = mmp.ConfigKeys("video_preprocessor_config.json", video, FAMILY, VIDEO_KNOWN)
    keys.pinned(PINNED)
    keys.one_of({"video_processor_type": VIDEO_PROCESSOR_TYPES, "processor_class": frozenset({"SmolVLMProcessor"})},
                nullable=True)
    for key, default in VIDEO_CLASS_DEFAULTS.items():
        if key == "do_image_splitting":
            continue
        ours, theirs = pp.get(key, CLASS_DEFAULTS[key]), keys.values.get(key, default)
        if theirs != ours:
            raise keys.error(key, f"{theirs!r} differs from preprocessor_config.json's {ours!r}: the smolvlm "
                                  "family processes video frames with the image fields")
    return keys


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
            video_preprocessor_config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
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
    variant = PROCESSORS[processor] if processor else MODEL_TYPES[config["model_type"]]
    if variant == "idefics3":
        if video_preprocessor_config is not None:
            raise mmp.SpecError("video_preprocessor_config.json: an Idefics3 model has no video processor "
                                "(transformers 5.24 ships SmolVLMVideoProcessor only)")
        video: dict[str, Any] = {}
    elif video_preprocessor_config is not None:
        video = _video_fields(_check_video_config(video_preprocessor_config, pp), _longest_edge(keys, "size"))
    else:  # transformers' video processor then reads preprocessor_config.json
        video = _video_fields(keys, _longest_edge(keys, "size"))
    fields = {
        "variant": variant,
        "image_token_id": image_token_id,
        **tokenizer,
        "image_seq_len": _image_seq_len(config, vision),
        "size_longest_edge": _longest_edge(keys, "size"),
        "max_image_size": tile,
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in ("do_resize", "do_image_splitting", "do_rescale",
                                                     "rescale_factor", "do_normalize", "image_mean", "image_std")},
        **video,
    }
    return parse_spec(fields).to_dict()
