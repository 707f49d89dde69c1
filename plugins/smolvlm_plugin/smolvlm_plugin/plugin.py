"""Discovery hooks: the module the ``mm_framework`` entry point ``smolvlm`` loads."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from mm_framework import plugin as mmp

from .family import SmolVLMFamily
from .hf_config import resolve
from .spec import FAMILY, PRESETS


@mmp.hookimpl
def mm_register_families(register: Callable[[str, Callable[[dict[str, Any]], object]], None]) -> None:
    register(FAMILY, SmolVLMFamily)


@mmp.hookimpl
def mm_register_presets(register: Callable[[str, Mapping[str, Any]], None]) -> None:
    for name, spec in PRESETS.items():
        register(name, copy.deepcopy(spec))


@mmp.hookimpl
def mm_spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    return resolve(config, preprocessor_config)
