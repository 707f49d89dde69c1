"""Discovery hooks: the module the ``mm_framework`` entry point ``glm4v`` loads."""

from __future__ import annotations

from mm_framework import plugin as mmp

from .family import Glm4vFamily
from .hf_config import resolve
from .spec import FAMILY, PRESETS

mm_register_families, mm_register_presets, mm_spec_from_hf_configs = mmp.discovery_hooks(
    {FAMILY: Glm4vFamily}, PRESETS, resolve, video=True)
