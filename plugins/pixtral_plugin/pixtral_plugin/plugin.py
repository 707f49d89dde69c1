"""Discovery hooks: the module the ``mm_framework`` entry point ``pixtral`` loads."""

from __future__ import annotations

from mm_framework import plugin as mmp

from .family import PixtralFamily
from . import hf_config
from .spec import FAMILY, PRESETS

mm_register_families, mm_register_presets, mm_spec_from_hf_configs = mmp.discovery_hooks(
    {FAMILY: PixtralFamily}, PRESETS, hf_config.resolve)
