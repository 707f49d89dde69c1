"""The ``llama4`` family for mm_framework: Llama 4's image preprocessing (transformers 5.24's
``Llama4Processor`` with ``Llama4ImageProcessor``), bit for bit. See docs/families/llama4.md."""

from .family import Llama4Family
from .spec import FAMILY, PRESETS, Llama4Spec, parse_spec
from .tiling import TileGrid, tile_grid

__all__ = ["FAMILY", "PRESETS", "Llama4Family", "Llama4Spec", "TileGrid", "parse_spec", "tile_grid"]
