"""The ``gemma3`` family for mm_framework: Gemma 3's image preprocessing (transformers 5.24's
``Gemma3Processor`` with the PIL image processor), bit for bit. See docs/families/gemma3.md."""

from .family import Gemma3Family
from .spec import FAMILY, PRESETS, Gemma3Spec, parse_spec

__all__ = ["FAMILY", "PRESETS", "Gemma3Family", "Gemma3Spec", "parse_spec"]
