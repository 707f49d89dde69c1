"""The ``qwen_vl`` family plugin for mm_framework (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5).

The plugin object the ``mm_framework`` entry point loads is :mod:`qwen_vl_plugin.plugin`.
"""

from .family import QwenVlFamily
from .hf_config import resolve as spec_from_hf_configs
from .spec import PRESETS, QwenVlSpec, parse_spec

__version__ = "0.1.0"
__all__ = ["PRESETS", "QwenVlFamily", "QwenVlSpec", "parse_spec", "spec_from_hf_configs"]
