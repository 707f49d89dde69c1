"""Discovery hooks: the module the ``mm_framework`` entry point ``qwen2_audio`` loads."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from mm_framework import plugin as mmp

from . import hf_config
from .family import Qwen2AudioFamily
from .spec import FAMILY, PRESETS


@mmp.hookimpl
def mm_register_families(register: Callable[[str, Callable[[dict[str, Any]], object]], None]) -> None:
    register(FAMILY, Qwen2AudioFamily)


@mmp.hookimpl
def mm_register_presets(register: Callable[[str, Mapping[str, Any]], None]) -> None:
    for name, spec in PRESETS.items():
        register(name, copy.deepcopy(spec))


@mmp.hookimpl
def mm_spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    return hf_config.resolve(config, preprocessor_config)
