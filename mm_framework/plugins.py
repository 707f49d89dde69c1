"""Discovery: the process-wide plugin manager and what its plugins announce.

Families arrive through the ``mm_framework`` entry-point group, loaded by pluggy's
``load_setuptools_entrypoints`` on first use (or are registered in-process with
:func:`register`). Two environment switches, read on first use, decide which entry
points load; pluggy lacks only the allowlist and the distribution-name match:

* ``MM_FRAMEWORK_LOAD_PLUGINS``: comma-separated allowlist of entry-point names or
  distribution names; set but empty loads none.
* ``MM_FRAMEWORK_DISABLE_PLUGINS``: comma-separated blocklist, same names.

Entry points a switch kept out are remembered (:func:`hidden`), so an empty family list
can say why.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pluggy

from . import default_modalities, hookspecs
from .errors import SpecError
from .modality import Modality

ENTRY_POINT_GROUP = hookspecs.PROJECT
LOAD_VAR, DISABLE_VAR = "MM_FRAMEWORK_LOAD_PLUGINS", "MM_FRAMEWORK_DISABLE_PLUGINS"
LOAD_FORMS = "comma-separated entry-point or distribution names to load, none else (set but empty: none)"
DISABLE_FORMS = "comma-separated entry-point or distribution names not to load"

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
_modalities: dict[str, Modality] | None = None  # by name, in registration order; reset on (un)register
_generation = 0  # bumped on every (un)register
_hidden: list[tuple[str, str, str]] = []  # (entry point, distribution, the switch that hid it)
_unmatched: list[tuple[str, str, str]] = []  # (switch, a name in it that nothing installed has, names it could take)


def switch_names(var: str) -> set[str] | None:
    """The names a switch lists (any value is accepted), or None when it is unset."""
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {n.strip() for n in raw.split(",") if n.strip()}


def _block_by_switches(pm: pluggy.PluginManager) -> None:
    allow, block = switch_names(LOAD_VAR), switch_names(DISABLE_VAR) or set()
    known: set[str] = set()
    example = "none installed"
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else ""
        keys = {ep.name, dist}
        known |= keys
        example = f"{ep.name} or {dist}" if dist else ep.name
        switch = LOAD_VAR if allow is not None and not keys & allow else DISABLE_VAR if keys & block else None
        if switch is not None:
            pm.set_blocked(ep.name)
            _hidden.append((ep.name, dist, switch))
    # A module name (qwen_vl_plugin) is the usual slip: say which names the switch takes.
    _unmatched.extend((var, n, example) for var, names in ((LOAD_VAR, allow or set()), (DISABLE_VAR, block))
                      for n in sorted(names - known))


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide discovery manager, entry points loaded on first use."""
    global _pm
    with _lock:
        if _pm is None:
            pm = pluggy.PluginManager(hookspecs.PROJECT)
            pm.add_hookspecs(hookspecs.DiscoverySpecs)
            pm.register(default_modalities, name="mm_framework.default_modalities")
            _block_by_switches(pm)
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
            pm.check_pending()
            _pm = pm
        return _pm


def hidden() -> list[tuple[str, str, str]]:
    """Entry points the switches kept out: ``(name, distribution, variable)``."""
    plugin_manager()
    return list(_hidden)


def hidden_note() -> str:
    """``"; qwen_vl (dist) is installed but hidden by VAR='...'"`` per hidden entry point,
    and a note per switch name that matches nothing, for messages that say no family
    answered."""
    notes = [f"; {name} ({dist}) is installed but hidden by {var}={os.environ.get(var, '')!r}"
             for name, dist, var in hidden()]
    notes += [f"; {var} names {name!r}, which is neither an installed plugin's entry-point name nor its "
              f"distribution's (e.g. {example})" for var, name, example in _unmatched]
    return "".join(notes)


def register(plugin: object, name: str | None = None) -> str:
    """Register an in-process discovery plugin (tests, embedding applications)."""
    pm = plugin_manager()
    with _lock:
        registered = pm.register(plugin, name=name)
        pm.check_pending()
        _forget_modalities()
    assert registered is not None
    return registered


def unregister(name: str) -> None:
    with _lock:
        plugin_manager().unregister(name=name)
        _forget_modalities()


def _forget_modalities() -> None:
    global _modalities, _generation
    _modalities = None
    _generation += 1


def generation() -> int:
    """A number that changes whenever an in-process plugin is registered or unregistered,
    for caches of anything built from the registry."""
    return _generation


def modalities() -> dict[str, Modality]:
    """Every registered modality by name, in registration order (built-ins first)."""
    global _modalities
    with _lock:
        if _modalities is None:
            found: dict[str, Modality] = {}

            def reg(modality: Modality) -> None:
                if not isinstance(modality, Modality) or not modality.name or not modality.keyword:
                    raise SpecError(f"a plugin registered {modality!r}, not a Modality with a name and a keyword")
                for other in found.values():
                    if modality.name == other.name or modality.keyword == other.keyword:
                        raise SpecError(f"modality {modality.name!r} ({modality.keyword}=) is registered twice")
                found[modality.name] = modality

            # pluggy calls the last registered first; the built-ins go first.
            for impl in reversed(plugin_manager().hook.mm_register_modalities.get_hookimpls()):
                impl.function(register=reg)
            _modalities = found
        return _modalities


@attrs.frozen
class FamilyInfo:
    name: str
    factory: Callable[[dict[str, Any]], object] = attrs.field(repr=False)
    plugin: str
    distribution: str
    version: str


def _origins(pm: pluggy.PluginManager) -> dict[int, tuple[str, str]]:
    return {id(plugin): (dist.project_name, dist.version) for plugin, dist in pm.list_plugin_distinfo()}


def families() -> dict[str, FamilyInfo]:
    """Every registered family, by name."""
    pm = plugin_manager()
    origins = _origins(pm)
    found: dict[str, FamilyInfo] = {}
    for impl in pm.hook.mm_register_families.get_hookimpls():
        dist, version = origins.get(id(impl.plugin), (f"<in-process plugin {impl.plugin_name}>", ""))

        def reg(
            name: str, factory: Callable[[dict[str, Any]], object], *, _impl=impl, _dist=dist, _ver=version
        ) -> None:
            if not isinstance(name, str) or not name:
                raise SpecError(f"plugin {_impl.plugin_name} registered a family with an invalid name {name!r}")
            if name in found:
                raise SpecError(f"family {name!r} is registered twice: by {found[name].distribution} and by {_dist}")
            found[name] = FamilyInfo(name, factory, _impl.plugin_name, _dist, _ver)

        impl.function(register=reg)
    return found


def presets() -> dict[str, dict[str, Any]]:
    """Every registered preset, by name (each a complete spec with ``"family"``)."""
    found: dict[str, dict[str, Any]] = {}

    def reg(name: str, spec: Mapping[str, Any]) -> None:
        if name in found:
            raise SpecError(f"preset {name!r} is registered twice")
        if "family" not in spec:
            raise SpecError(f"preset {name!r} has no 'family'")
        found[name] = dict(spec)

    plugin_manager().hook.mm_register_presets(register=reg)
    return found


def claimed_spec(
    config: Mapping[str, Any],
    preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The spec of the installed family that claims the model, ``None`` when none does
    (a family that claims it and refuses a key raises its ``SpecError``)."""
    return plugin_manager().hook.mm_spec_from_hf_configs(
        config=config, preprocessor_config=preprocessor_config, video_preprocessor_config=video_preprocessor_config
    )


def spec_from_hf_configs(
    config: Mapping[str, Any],
    preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec = claimed_spec(config, preprocessor_config, video_preprocessor_config)
    if spec is None:
        model_type = config.get("model_type", "<none>") if isinstance(config, Mapping) else "<none>"
        raise SpecError(f"no installed family handles model_type {model_type!r}; installed: {sorted(families())}")
    return spec
