"""Discovery hooks: the module the ``mm_framework`` entry point ``gemma4`` loads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mm_framework import plugin as mmp

from .family import Gemma4Family
from .hf_config import resolve
from .spec import FAMILY, PRESETS

mm_register_families, mm_register_presets, _ = mmp.discovery_hooks({FAMILY: Gemma4Family}, PRESETS, resolve)


@mmp.hookimpl
def mm_spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],
                            video_preprocessor_config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return resolve(config, preprocessor_config, video_preprocessor_config)
