"""Preprocessor keys that transformers' Qwen-VL image and video processors read alike.

Shared by :mod:`.hf_config` (the image processor) and :mod:`.hf_video_config` (the video
processor, which reads ``preprocessor_config.json`` itself when a model has no video
config).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mm_framework.plugin import SpecError

# Keys pinned to the single value implemented (PILImageResampling.BICUBIC is 3).
PINNED: dict[str, Any] = {
    "do_resize": True,
    "do_rescale": True,
    "do_normalize": True,
    "do_convert_rgb": True,
    "rescale_factor": 1 / 255,
    "resample": 3,
}
PROCESSOR_CLASSES = frozenset({"Qwen2VLProcessor", "Qwen2_5_VLProcessor", "Qwen3VLProcessor"})

ErrorFor = Callable[[str, str], SpecError]


def qwen2_pixels(pp: Mapping[str, Any], default_size: Mapping[str, Any], err: ErrorFor) -> tuple[Any, Any]:
    """``(min_pixels, max_pixels)`` the way the Qwen2-VL processors' ``__init__`` derives
    them: ``size`` (else ``default_size``), overridden by top-level ``min_pixels`` /
    ``max_pixels``, which also drop the size dict's legacy keys."""
    size = pp.get("size", default_size)
    if not isinstance(size, Mapping):
        raise err("size", f"must be an object, got {size!r}")
    size = dict(size)
    if "min_pixels" in pp:
        size["shortest_edge"] = pp["min_pixels"]
        size.pop("min_pixels", None)
    if "max_pixels" in pp:
        size["longest_edge"] = pp["max_pixels"]
        size.pop("max_pixels", None)
    if set(size) != {"shortest_edge", "longest_edge"}:
        raise err("size", f"must resolve to exactly shortest_edge and longest_edge, got {sorted(size)}")
    return size["shortest_edge"], size["longest_edge"]
