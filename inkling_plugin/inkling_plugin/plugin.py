"""Entry point of the ``inkling_plugin`` distribution (group ``mm_framework``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mm_framework.plugin import hookimpl

from .family import InklingFamily
from .hf_config import resolve


@hookimpl
def mm_register_families(register: Callable[[str, Callable[[dict[str, Any]], object]], None]) -> None:
    register("inkling", InklingFamily)


@hookimpl
def mm_spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any] | None:
    return resolve(config, preprocessor_config)
