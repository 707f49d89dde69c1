"""The ``paddleocr_vl`` family for mm_framework: PaddleOCR-VL's image preprocessing
(transformers 5.24's ``PaddleOCRVLProcessor``), bit for bit. See docs/families/paddleocr_vl.md."""

from .family import PaddleOcrVlFamily
from .spec import FAMILY, PRESETS, PaddleOcrVlSpec, parse_spec

__all__ = ["FAMILY", "PRESETS", "PaddleOcrVlFamily", "PaddleOcrVlSpec", "parse_spec"]
