"""mm_framework: multimodal preprocessing for LLM inference serving.

This module is the public API: what a serving engine calls, and (with
:mod:`mm_framework.kernels` and :mod:`mm_framework.testing`) all a family plugin may
import. Families are plugins (entry-point group ``mm_framework``); plugin authors write
``from mm_framework import hookimpl``. The layout of the package is described in
docs/architecture.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from . import plugins as _plugins
from .cache import CacheStats, FeatureCache
from .carriers import Capabilities, DecodedImage, DecodeOptions, Grid, ItemPlan, MRope, ProcessedItem, Rope1D, Tensor, Tiles
from .errors import (
    FetchError,
    InternalError,
    InvalidInputError,
    LayoutError,
    LimitExceededError,
    MediaError,
    MmError,
    SettingError,
    SpecError,
    UnsupportedError,
)
from .hookspecs import hookimpl
from .layout import Explicit, ExpandedPrompt, Media, Repeat, Text, TokenLayout, apply_layout, layout_by_placeholder
from .limits import Limits
from .media import FetchPolicy, content_hash, decode_rgb, take_source
from .handoff import to_torch
from .pipeline import Pipeline, pipeline_from_spec
from .media.video import ClipHeader, VideoClip, decode_clip
from .media.video_frames import clip_from_frames, select_frames
from .request import ItemTimings, MmInput, Output, OutputItem, Timings, VideoFrames
from .positions import mrope_image_only
from .spec_fields import SpecFields

__version__ = "0.1.0"


def list_families() -> list[dict[str, str]]:
    """Installed families: name, providing distribution and its version."""
    return [
        {"name": f.name, "distribution": f.distribution, "version": f.version, "plugin": f.plugin}
        for f in sorted(_plugins.families().values(), key=lambda f: f.name)
    ]


def list_presets() -> dict[str, dict[str, Any]]:
    return _plugins.presets()


def preset(name: str) -> dict[str, Any]:
    """The resolved spec dict of a named preset (e.g. ``"qwen2_vl"``)."""
    found = _plugins.presets()
    if name not in found:
        raise SpecError(f"unknown preset {name!r}; installed presets: {sorted(found) or 'none'}")
    return found[name]


def spec_from_hf_configs(
    config: Mapping[str, Any],
    preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Resolve a spec from a model's ``config.json`` and ``preprocessor_config.json`` dicts,
    and its ``video_preprocessor_config.json`` dict when the model has one."""
    return _plugins.spec_from_hf_configs(config, preprocessor_config, video_preprocessor_config)


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise SpecError(f"{path}: invalid JSON: {e}") from None


def spec_from_model_dir(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Resolve a spec from a model directory holding ``config.json`` and
    ``preprocessor_config.json``, and ``video_preprocessor_config.json`` when present
    (transformers reads it for the video processor, else the image processor's file)."""
    root = os.fspath(path)
    config, preprocessor = (_read_json(os.path.join(root, n)) for n in ("config.json", "preprocessor_config.json"))
    video_path = os.path.join(root, "video_preprocessor_config.json")
    video = _read_json(video_path) if os.path.exists(video_path) else None
    return spec_from_hf_configs(config, preprocessor, video)


__all__ = [
    "CacheStats", "Capabilities", "ClipHeader", "VideoClip", "VideoFrames", "DecodeOptions", "DecodedImage", "Explicit", "ExpandedPrompt", "FeatureCache",
    "FetchError", "FetchPolicy", "Grid", "InternalError", "InvalidInputError", "ItemPlan", "ItemTimings",
    "LayoutError", "LimitExceededError", "Limits", "MRope", "Media", "MediaError", "MmError", "MmInput", "Output",
    "OutputItem", "Pipeline", "ProcessedItem", "Repeat", "Rope1D", "SpecError", "SpecFields", "Tensor", "Text",
    "Tiles", "Timings", "TokenLayout", "UnsupportedError", "apply_layout", "clip_from_frames", "content_hash",
    "decode_clip", "decode_rgb", "hookimpl", "layout_by_placeholder", "list_families", "list_presets", "mrope_image_only", "pipeline_from_spec", "preset",
    "select_frames", "spec_from_hf_configs", "spec_from_model_dir", "take_source", "to_torch", "SettingError",
]
