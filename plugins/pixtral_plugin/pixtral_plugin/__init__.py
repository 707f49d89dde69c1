"""The ``pixtral`` family plugin for mm_framework (Pixtral, and Mistral 3 via its spatial merge).

The plugin object the ``mm_framework`` entry point loads is :mod:`pixtral_plugin.plugin`.
"""

from .family import PixtralFamily
from .hf_config import resolve as spec_from_hf_configs
from .spec import PRESETS, PixtralSpec, parse_spec

__version__ = "0.1.0"
__all__ = ["PRESETS", "PixtralFamily", "PixtralSpec", "parse_spec", "spec_from_hf_configs"]
