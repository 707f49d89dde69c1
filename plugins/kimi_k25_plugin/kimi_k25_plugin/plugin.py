"""Discovery hooks: the module the ``mm_framework`` entry point ``kimi_k25`` loads."""

from __future__ import annotations

from mm_framework import plugin as mmp

from .family import KimiK25Family
from .hf_config import resolve
from .spec import FAMILY, PRESETS

mm_register_families, mm_register_presets, mm_spec_from_hf_configs = mmp.discovery_hooks(
    {FAMILY: KimiK25Family}, PRESETS, resolve, video=True)
