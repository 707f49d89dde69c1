"""The ``glm4v`` family for mm_framework: GLM-4.1V / 4.5V / 4.6V image and video preprocessing
(transformers 5.24's ``Glm4vProcessor`` and ``Glm46VProcessor``), bit for bit. See docs/families/glm4v.md."""

from .family import Glm4vFamily
from .spec import FAMILY, PRESETS, Glm4vSpec, parse_spec
from .video import timestamp_texts

__all__ = ["FAMILY", "PRESETS", "Glm4vFamily", "Glm4vSpec", "parse_spec", "timestamp_texts"]
