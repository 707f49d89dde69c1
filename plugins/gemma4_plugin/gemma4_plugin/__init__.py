"""The ``gemma4`` family for mm_framework: Gemma 4's image and video preprocessing (transformers 5.24's
``Gemma4Processor`` with ``Gemma4ImageProcessorPil`` or the torchvision ``Gemma4ImageProcessor``),
bit for bit. See docs/families/gemma4.md."""

from .family import Gemma4Family
from .spec import FAMILY, PRESETS, Gemma4Spec, parse_spec

__all__ = ["FAMILY", "PRESETS", "Gemma4Family", "Gemma4Spec", "parse_spec"]
