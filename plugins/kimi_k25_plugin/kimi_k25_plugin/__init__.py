"""The ``kimi_k25`` family for mm_framework: Kimi K2.5's image preprocessing
(transformers 5.24's ``Kimi_K25Processor``), bit for bit. See docs/families/kimi_k25.md."""

from .family import KimiK25Family
from .sizing import navit_resize
from .spec import FAMILY, PRESETS, KimiK25Spec, parse_spec
from .video_spec import video_text_token_ids

__all__ = ["FAMILY", "PRESETS", "KimiK25Family", "KimiK25Spec", "navit_resize", "parse_spec", "video_text_token_ids"]
