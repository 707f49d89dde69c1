"""The family toolkit: what a family plugin imports (``from mm_framework import plugin as mmp``).

A family may rely on every name here keeping its meaning: ``hookimpl`` marks its hook
methods (the hook contracts are the docstrings of :mod:`mm_framework.hookspecs`) and
``discovery_hooks`` writes a distribution's three discovery hooks; the
carriers are the frozen values hooks take and return; the layout values describe how a
prompt expands; ``SpecFields`` parses and validates its spec; ``ConfigKeys`` consumes every
key of a transformers config file its HF-config resolver reads; ``Modality`` and
``ItemContext`` are what a new modality registers; ``joined`` builds a batch tensor from
the items' arrays (one item's own, uncopied); the decode helpers decode images,
clips and audio as the built-in modalities do; the error classes are what a hook raises to reject an
item; ``PatchGrid`` is the still-image path of Qwen2-VL-style families (``PatchGridSpec``
its spec fields) and ``mrope`` the
M-RoPE positions of their image-only prompts; ``whisper`` holds the audio items of
families whose audio tower is Whisper's encoder.
Together with :mod:`mm_framework.kernels` and :mod:`mm_framework.testing` this is all
a family needs; the engine API (:mod:`mm_framework`) is for serving code and tests.
"""

from __future__ import annotations

from .carriers import (
    AudioHeader, Capabilities, ClipHeader, DecodedAudio, DecodedImage, DecodeOptions, Grid, ImageHeader, ItemOutputs,
    ItemPlan, MRope, OutputItem, PixelNorm, ProcessedItem, Rope1D, Tensor, Tiles,
)
from .config_keys import ConfigKeys
from .distribution_hooks import discovery_hooks
from .errors import (
    FetchError, InternalError, InvalidInputError, LayoutError, LimitExceededError, MediaError, MmError, SettingError,
    SpecError, UnsupportedError,
)
from .hookspecs import hookimpl
from .layout import (
    Explicit, ExpandedPrompt, Media, Repeat, Text, TokenLayout, apply_layout, layout_by_placeholder,
    layout_by_placeholders,
)
from .media.audio import decode_audio
from .media.decode import decode_rgb, take_source
from .media.video import VideoClip, decode_clip
from .media.video_frames import clip_from_frames, select_frames
from .modality import ItemContext, Modality
from .model_kwargs import joined
from .patch_grid import PatchGrid, PatchGridSpec, PatchPixels
from .spec_fields import SpecFields
from . import mrope_positions as mrope
from . import whisper_audio as whisper
from . import temporal_patches as video_patches

__all__ = [
    "hookimpl", "discovery_hooks",
    # carriers
    "Capabilities", "ClipHeader", "DecodeOptions", "DecodedImage", "Grid", "ImageHeader", "ItemOutputs", "ItemPlan",
    "MRope",
    "OutputItem", "PixelNorm", "ProcessedItem", "Rope1D", "Tensor", "Tiles", "VideoClip",
    # layout
    "ExpandedPrompt", "Explicit", "Media", "Repeat", "Text", "TokenLayout", "apply_layout", "layout_by_placeholder",
    "layout_by_placeholders",
    "SpecFields", "ConfigKeys", "ItemContext", "Modality", "PatchGrid", "PatchGridSpec", "PatchPixels", "joined",
    "AudioHeader", "DecodedAudio",
    "mrope", "whisper", "video_patches",
    # decode helpers
    "clip_from_frames", "decode_audio", "decode_clip", "decode_rgb", "select_frames", "take_source",
    # errors
    "FetchError", "InternalError", "InvalidInputError", "LayoutError", "LimitExceededError", "MediaError", "MmError",
    "SettingError", "SpecError", "UnsupportedError",
]
