"""mm_framework: multimodal preprocessing for LLM inference serving.

This module is the public API: what a serving engine calls, and (with
:mod:`mm_framework.kernels` and :mod:`mm_framework.testing`) all a family plugin may
import. Families are plugins (entry-point group ``mm_framework``); plugin authors write
``from mm_framework import hookimpl``. The layout of the package is described in
docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

from . import plugins as _plugins
from .cache import CacheStats, FeatureCache
from .carriers import (
    Capabilities, ClipHeader, DecodedImage, DecodeOptions, Grid, ImageHeader, ItemOutputs, ItemPlan, ItemTimings, MRope, OutputItem, ProcessedItem, Rope1D,
    Tensor, Tiles, Timings, VideoFrames,
)
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
from .media.video import VideoClip, decode_clip
from .media.video_frames import clip_from_frames, select_frames
from .modality import Modality
from .request import Image, Item, MmInput, Output, Video
from .spec_fields import SpecFields
from .specs import preset, spec_from_arg, spec_from_hf_configs, spec_from_model_dir
from .chat import Processor

__version__ = "0.1.0"


def list_families() -> list[dict[str, str]]:
    """Installed families: name, providing distribution and its version."""
    return [
        {"name": f.name, "distribution": f.distribution, "version": f.version, "plugin": f.plugin}
        for f in sorted(_plugins.families().values(), key=lambda f: f.name)
    ]


def list_presets() -> dict[str, dict[str, Any]]:
    return _plugins.presets()


__all__ = [
    "CacheStats", "Capabilities", "Image", "ImageHeader", "ItemOutputs", "Item", "Modality", "Video", "ClipHeader", "VideoClip", "VideoFrames", "DecodeOptions", "DecodedImage", "Explicit", "ExpandedPrompt", "FeatureCache",
    "FetchError", "FetchPolicy", "Grid", "InternalError", "InvalidInputError", "ItemPlan", "ItemTimings",
    "LayoutError", "LimitExceededError", "Limits", "MRope", "Media", "MediaError", "MmError", "MmInput", "Output",
    "OutputItem", "Pipeline", "ProcessedItem", "Repeat", "Rope1D", "SpecError", "SpecFields", "Tensor", "Text",
    "Tiles", "Timings", "TokenLayout", "UnsupportedError", "apply_layout", "clip_from_frames", "content_hash",
    "decode_clip", "decode_rgb", "hookimpl", "layout_by_placeholder", "list_families", "list_presets", "pipeline_from_spec", "preset",
    "select_frames", "spec_from_arg", "spec_from_hf_configs", "spec_from_model_dir", "take_source", "to_torch", "SettingError",
    "Processor",
]
