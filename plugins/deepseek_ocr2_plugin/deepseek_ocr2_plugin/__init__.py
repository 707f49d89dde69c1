"""The ``deepseek_ocr2`` family for mm_framework: DeepSeek-OCR-2's image preprocessing
(transformers 5.24's ``DeepseekOcr2Processor`` with its image processors), bit for bit.
See docs/families/deepseek_ocr2.md."""

from .family import DeepseekOcr2Family
from .spec import FAMILY, PRESETS, DeepseekOcr2Spec, parse_spec
from .tiling import LocalCrops, optimal_canvas

__all__ = ["FAMILY", "PRESETS", "DeepseekOcr2Family", "DeepseekOcr2Spec", "LocalCrops", "optimal_canvas",
           "parse_spec"]
