"""Resolve a ``minicpmv4_6`` spec from a model's ``config.json`` + ``preprocessor_config.json``.

Conservative by design: every preprocessor key is consumed. A key feeds a spec field, is
pinned to the one value implemented, names a class, or is inert for images (``use_image_id``
feeds the spec: the processor reads it from its image processor); anything else is refused
by name. Missing keys take ``MiniCPMV4_6ImageProcessorPil``'s class attributes, what
``from_pretrained`` would use.

Video (docs/families/minicpmv4_6.md §6): ``config.json``'s ``video_token_id`` (absent: the
model takes no video, as its forward) and ``MiniCPMV4_6VideoProcessor``'s options, from
``video_preprocessor_config.json`` or, when the model has none, from
``preprocessor_config.json`` (what ``AutoVideoProcessor`` reads then). The pixel statistics,
patch size and resample are shared with images in a spec: a video config that disagrees is
refused, and so is ``do_sample_frames`` false.

The prompt's marker, digit and newline ids live in the tokenizer, which this resolver does
not read: they come from the published vocabulary that ``config.json``'s ``image_token_id``
identifies (the preset's, docs/families/minicpmv4_6.md §1). A model with another
vocabulary is refused naming ``image_token_id``: write its spec by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import kernels
from mm_framework import plugin as mmp

from .spec import FAMILY, PRESETS, TOKENS, parse_spec

MODEL_TYPES = frozenset({"minicpmv4_6"})
CLASS_NAMES = {
    "image_processor_type": frozenset({"MiniCPMV4_6ImageProcessor", "MiniCPMV4_6ImageProcessorPil",
                                       "MiniCPMV4_6ImageProcessorFast"}),
    "processor_class": frozenset({"MiniCPMV4_6Processor"}),
}
RESAMPLE = kernels.TRANSFORMERS_RESAMPLE
# RGB conversion is the only path implemented; the resize is what the processor computes
# the sizes for (without it, slices of unequal size would not fit the grid).
PINNED: dict[str, Any] = {"do_convert_rgb": True, "do_resize": True}
# MiniCPMV4_6ImageProcessorPil's class attributes (IMAGENET_STANDARD mean and std).
CLASS_DEFAULTS: dict[str, Any] = {
    "resample": 3,
    "do_rescale": True,
    "rescale_factor": 1 / 255,
    "do_normalize": True,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "max_slice_nums": 9,
    "scale_resolution": 448,
    "patch_size": 14,
    "slice_mode": True,
    "downsample_mode": "16x",
    "use_image_id": True,
}
# MiniCPMV4_6VideoProcessor's keys beyond the image processor's, pinned to what is implemented
# or feeding a spec field; preprocessor_config.json may hold them when it is the video source.
VIDEO_PINNED: dict[str, Any] = {"do_sample_frames": True}
VIDEO_DEFAULTS: dict[str, Any] = {"max_num_frames": 128, "stack_frames": 1}
VIDEO_NAMES = {"video_processor_type": frozenset({"MiniCPMV4_6VideoProcessor"}),
               "processor_class": CLASS_NAMES["processor_class"]}
# The video processor's options that become the spec's video_* fields.
VIDEO_FIELDS = ("max_num_frames", "stack_frames", "slice_mode", "max_slice_nums", "scale_resolution", "downsample_mode")
# What the spec shares between images and videos.
SHARED = ("resample", "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std", "patch_size")
KNOWN = {*PINNED, *CLASS_DEFAULTS, *CLASS_NAMES, *VIDEO_PINNED, *VIDEO_DEFAULTS, "video_processor_type"}
VIDEO_KNOWN = {*PINNED, *CLASS_DEFAULTS, *VIDEO_PINNED, *VIDEO_DEFAULTS, *VIDEO_NAMES}
_TOKENIZER_FIELDS = (*(t for t in TOKENS if t != "image_token_id"), "digit_token_ids")
TOKENIZERS = {PRESETS["minicpm_v_4_6"]["image_token_id"]: {k: PRESETS["minicpm_v_4_6"][k] for k in _TOKENIZER_FIELDS}}
# image_token_id -> the vocabulary's <|video_pad|> id.
VIDEO_TOKENS = {PRESETS["minicpm_v_4_6"]["image_token_id"]: PRESETS["minicpm_v_4_6"]["video_token_id"]}


def resolve(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
            video_preprocessor_config: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The spec dict for a MiniCPM-V 4.6 model, or ``None`` when the model is not one."""
    if not isinstance(config, Mapping) or config.get("model_type") not in MODEL_TYPES:
        return None
    names = {**CLASS_NAMES, "video_processor_type": VIDEO_NAMES["video_processor_type"]}
    keys = mmp.ConfigKeys.preprocessor(preprocessor_config, FAMILY, KNOWN, pinned={**PINNED, **VIDEO_PINNED},
                                       names=names)
    pp = keys.values
    resample = pp.get("resample", CLASS_DEFAULTS["resample"])
    if isinstance(resample, bool) or resample not in RESAMPLE:
        raise keys.error("resample", f"must be one of {sorted(RESAMPLE)} (Pillow LANCZOS, BILINEAR, BICUBIC), "
                                     f"got {resample!r}")
    image_token_id = config.get("image_token_id")
    tokenizer = TOKENIZERS.get(image_token_id) if isinstance(image_token_id, int) else None
    if tokenizer is None:
        raise mmp.SpecError(
            f"config.json: 'image_token_id'={image_token_id!r} is not one of the published vocabularies "
            f"({', '.join(map(str, sorted(TOKENIZERS)))}) whose marker, digit and newline ids the minicpmv4_6 family "
            "knows; write the spec with the tokenizer's ids by hand")
    mode = config.get("downsample_mode", CLASS_DEFAULTS["downsample_mode"])
    if pp.get("downsample_mode", mode) != mode:
        raise keys.error("downsample_mode", f"={pp['downsample_mode']!r} disagrees with config.json "
                                            f"downsample_mode={mode!r}")
    fields = {
        "image_token_id": image_token_id,
        **tokenizer,
        "resample": RESAMPLE[resample],
        **{k: pp.get(k, CLASS_DEFAULTS[k]) for k in CLASS_DEFAULTS if k != "resample"},
        **_video_fields(config, image_token_id, pp, video_preprocessor_config, mode),
    }
    return parse_spec(fields).to_dict()


def _video_fields(config: Mapping[str, Any], image_token_id: int, pp: Mapping[str, Any],
                  video_config: Mapping[str, Any] | None, mode: str) -> dict[str, Any]:
    """The spec's video fields: none (no video) without ``config.json`` ``video_token_id``."""
    token = config.get("video_token_id")
    if token is None:
        return {"video_token_id": None}
    if token != VIDEO_TOKENS[image_token_id]:
        raise mmp.SpecError(f"config.json: 'video_token_id'={token!r} is not <|video_pad|> of the vocabulary "
                            f"with image_token_id {image_token_id} ({VIDEO_TOKENS[image_token_id]})")
    if video_config is None:
        vp, error = pp, None
    else:
        vkeys = mmp.ConfigKeys("video_preprocessor_config.json", video_config, FAMILY, VIDEO_KNOWN)
        vkeys.pinned({**PINNED, **VIDEO_PINNED})
        vkeys.one_of(VIDEO_NAMES, nullable=True)
        vp, error = vkeys.values, vkeys.error
        for key in SHARED:
            if vp.get(key, CLASS_DEFAULTS[key]) != pp.get(key, CLASS_DEFAULTS[key]):
                raise error(key, f"{vp.get(key, CLASS_DEFAULTS[key])!r} differs from preprocessor_config.json's "
                                 f"{pp.get(key, CLASS_DEFAULTS[key])!r} (a minicpmv4_6 spec shares it)")
    defaults = {**CLASS_DEFAULTS, **VIDEO_DEFAULTS}
    if error is not None and vp.get("downsample_mode", mode) != mode:
        raise error("downsample_mode", f"{vp['downsample_mode']!r} disagrees with config.json "
                                       f"downsample_mode={mode!r}")
    return {"video_token_id": token, **{f"video_{k}": vp.get(k, defaults[k]) for k in VIDEO_FIELDS}}
