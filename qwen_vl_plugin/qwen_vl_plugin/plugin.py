"""Discovery hooks: the module the ``mm_framework`` entry point ``qwen_vl`` loads."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from mm_framework import plugin as mmp

from . import hf_config, omni_hf_config
from .family import QwenVlFamily
from .omni_family import Qwen25OmniFamily
from .omni_spec import FAMILY as OMNI_FAMILY, PRESETS as OMNI_PRESETS
from .spec import FAMILY, PRESETS


@mmp.hookimpl
def mm_register_families(register: Callable[[str, Callable[[dict[str, Any]], object]], None]) -> None:
    register(FAMILY, QwenVlFamily)
    register(OMNI_FAMILY, Qwen25OmniFamily)


@mmp.hookimpl
def mm_register_presets(register: Callable[[str, Mapping[str, Any]], None]) -> None:
    for name, spec in {**PRESETS, **OMNI_PRESETS}.items():
        register(name, copy.deepcopy(spec))


@mmp.hookimpl
def mm_spec_from_hf_configs(
    config: Mapping[str, Any],
    preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    omni = omni_hf_config.resolve(config, preprocessor_config, video_preprocessor_config)
    return omni if omni is not None else hf_config.resolve(config, preprocessor_config, video_preprocessor_config)
