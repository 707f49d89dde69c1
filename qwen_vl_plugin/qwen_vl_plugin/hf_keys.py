"""Preprocessor keys that transformers' Qwen-VL image and video processors read alike.

Shared by :mod:`.hf_config` (the image processor) and :mod:`.hf_video_config` (the video
processor, which reads ``preprocessor_config.json`` itself when a model has no video
config).
"""

from __future__ import annotations

from typing import Any

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
