"""``discovery_hooks``: the three discovery hooks of a plugin distribution that registers
families, the presets of published checkpoints, and an HF-config resolver, written once.

The module an entry point names binds them by their hook names, which is how pluggy finds
them in a module::

    mm_register_families, mm_register_presets, mm_spec_from_hf_configs = mmp.discovery_hooks(
        {FAMILY: MyFamily}, PRESETS, hf_config.resolve)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from .hookspecs import hookimpl

__all__ = ["discovery_hooks"]

Factory = Callable[[dict[str, Any]], object]
Resolver = Callable[[Mapping[str, Any], Mapping[str, Any]], "dict[str, Any] | None"]


def discovery_hooks(families: Mapping[str, Factory], presets: Mapping[str, Mapping[str, Any]],
                    resolve: Resolver, *, video: bool = False
                    ) -> tuple[Callable[..., None], Callable[..., None], Callable[..., Any]]:
    """``(mm_register_families, mm_register_presets, mm_spec_from_hf_configs)``: ``families``
    (name -> factory) and ``presets`` (name -> full spec, each registered as a copy, so no
    caller can change the table) registered, and ``resolve(config, preprocessor_config)``
    answering for HF model directories (``None`` for models that are not the plugin's); with
    ``video``, ``resolve(config, preprocessor_config, video_preprocessor_config)`` (``None``
    when the model has no video processor config)."""
    families, presets = dict(families), {k: copy.deepcopy(v) for k, v in presets.items()}

    @hookimpl
    def mm_register_families(register: Callable[[str, Factory], None]) -> None:
        for name, factory in families.items():
            register(name, factory)

    @hookimpl
    def mm_register_presets(register: Callable[[str, Mapping[str, Any]], None]) -> None:
        for name, spec in presets.items():
            register(name, copy.deepcopy(spec))

    @hookimpl
    def mm_spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]
                                ) -> dict[str, Any] | None:
        return resolve(config, preprocessor_config)

    if video:
        @hookimpl(specname="mm_spec_from_hf_configs")
        def mm_spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any],  # noqa: F811
                                    video_preprocessor_config: Mapping[str, Any] | None) -> dict[str, Any] | None:
            return resolve(config, preprocessor_config, video_preprocessor_config)

    return mm_register_families, mm_register_presets, mm_spec_from_hf_configs
