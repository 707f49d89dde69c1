"""The ``intern_vl`` family plugin for mm_framework (InternVL dynamic tiles).

The plugin object the ``mm_framework`` entry point loads is :mod:`intern_vl_plugin.plugin`.
"""

from .family import InternVlFamily
from .spec import PRESETS, InternVlSpec, parse_spec

__version__ = "0.1.0"
__all__ = ["PRESETS", "InternVlFamily", "InternVlSpec", "parse_spec"]
