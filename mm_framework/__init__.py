"""mm_framework: multimodal preprocessing for LLM inference serving.

This module is the engine API: what a serving engine calls (pipelines, inputs, outputs,
errors, limits, fetch policy, cache, presets and spec resolution). Families are plugins
(entry-point group ``mm_framework``) written against the toolkit, :mod:`mm_framework.plugin`
(with :mod:`mm_framework.kernels` and :mod:`mm_framework.testing`). The layout of the
package is described in docs/architecture.md.
"""

from __future__ import annotations

from typing import Any

from . import plugins as _plugins
from .cache import CacheStats, FeatureCache
from .carriers import Audio, Grid, ItemTimings, MRope, OutputItem, Rope1D, Tiles, Timings, VideoFrames
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
from .handoff import to_torch
from .limits import Limits
from .media.hashing import content_hash
from .media.policy import FetchPolicy
from .pipeline import Pipeline, pipeline_from_spec
from .request import Image, Item, MmInput, Output, Video
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
    # pipelines, inputs and outputs
    "Pipeline", "pipeline_from_spec", "MmInput", "Item", "Image", "Video", "VideoFrames", "Output", "OutputItem",
    "Audio", "Timings", "ItemTimings", "Grid", "Tiles", "Rope1D", "MRope",
    # errors
    "MmError", "UnsupportedError", "InvalidInputError", "SpecError", "SettingError", "MediaError", "LayoutError",
    "LimitExceededError", "FetchError", "InternalError",
    # limits, fetching, caching
    "Limits", "FetchPolicy", "FeatureCache", "CacheStats",
    # presets, families and spec resolution
    "preset", "list_presets", "list_families", "spec_from_arg", "spec_from_hf_configs", "spec_from_model_dir",
    "content_hash", "to_torch", "__version__",
    "Processor",
]
