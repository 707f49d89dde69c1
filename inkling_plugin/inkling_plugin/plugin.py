"""Entry point of the ``inkling_plugin`` distribution (group ``mm_framework``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mm_framework.plugin import hookimpl

from .family import InklingFamily


@hookimpl
def mm_register_families(register: Callable[[str, Callable[[dict[str, Any]], object]], None]) -> None:
    register("inkling", InklingFamily)
