"""The ``llava_onevision`` family plugin for mm_framework (LLaVA-OneVision anyres tiles).

Bit-exact with transformers 5.24's ``LlavaOnevisionProcessor`` over
``LlavaOnevisionImageProcessorPil`` (docs/families/llava_onevision.md). The plugin object
the ``mm_framework`` entry point loads is :mod:`llava_onevision_plugin.plugin`.
"""

from .anyres import AnyresPlan
from .family import LlavaOnevisionFamily
from .hf_config import resolve as spec_from_hf_configs
from .spec import PRESETS, LlavaOnevisionSpec, parse_spec

__version__ = "0.1.0"
__all__ = ["PRESETS", "AnyresPlan", "LlavaOnevisionFamily", "LlavaOnevisionSpec", "parse_spec", "spec_from_hf_configs"]
