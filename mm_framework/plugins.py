"""Plugin loading and the typed facades over ``pm.hook``.

Families arrive through the ``mm_framework`` entry-point group (or are registered
in-process with :func:`register`). Loading is lazy and controllable:

* ``MM_FRAMEWORK_LOAD_PLUGINS``: comma-separated allowlist of entry-point names or
  distribution names; set but empty loads none.
* ``MM_FRAMEWORK_DISABLE_PLUGINS``: comma-separated blocklist, same names.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pluggy

from . import hookspecs
from .carriers import Capabilities, DecodedImage, DecodeOptions, Geometry, OutputItem, Positions, ProcessedItem
from .errors import InternalError, MmError, SpecError, UnsupportedError
from .layout import TokenLayout

ENTRY_POINT_GROUP = hookspecs.PROJECT

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None
# Which distribution (name, version) each entry-point plugin object came from.
_DIST_OF: dict[int, tuple[str, str]] = {}


def _names(var: str) -> set[str] | None:
    raw = os.environ.get(var)
    if raw is None:
        return None
    return {n.strip() for n in raw.split(",") if n.strip()}


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    allow = _names("MM_FRAMEWORK_LOAD_PLUGINS")
    block = _names("MM_FRAMEWORK_DISABLE_PLUGINS") or set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else ""
        keys = {ep.name, dist}
        if allow is not None and not keys & allow:
            continue
        if keys & block or pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        plugin = ep.load()
        pm.register(plugin, name=ep.name)
        _DIST_OF[id(plugin)] = (dist, ep.dist.version if ep.dist is not None else "")


def plugin_manager() -> pluggy.PluginManager:
    """The process-wide discovery manager, entry points loaded on first use."""
    global _pm
    with _lock:
        if _pm is None:
            pm = pluggy.PluginManager(hookspecs.PROJECT)
            pm.add_hookspecs(hookspecs.DiscoverySpecs)
            _load_entry_points(pm)
            pm.check_pending()
            _pm = pm
        return _pm


def register(plugin: object, name: str | None = None) -> str:
    """Register an in-process discovery plugin (tests, embedding applications)."""
    pm = plugin_manager()
    with _lock:
        registered = pm.register(plugin, name=name)
        pm.check_pending()
    assert registered is not None
    return registered


def unregister(name: str) -> None:
    with _lock:
        plugin_manager().unregister(name=name)


def reload() -> None:
    """Forget the discovery manager; the next use re-reads entry points and the env."""
    global _pm
    with _lock:
        _pm = None
        _DIST_OF.clear()


@attrs.frozen
class FamilyInfo:
    name: str
    factory: Callable[[dict[str, Any]], object] = attrs.field(repr=False)
    plugin: str
    distribution: str
    version: str


def _origin(impl: pluggy.HookImpl) -> tuple[str, str]:
    return _DIST_OF.get(id(impl.plugin), (f"<in-process plugin {impl.plugin_name}>", ""))


def families() -> dict[str, FamilyInfo]:
    """Every registered family, by name."""
    pm = plugin_manager()
    found: dict[str, FamilyInfo] = {}
    for impl in pm.hook.mm_register_families.get_hookimpls():
        dist, version = _origin(impl)

        def reg(name: str, factory: Callable[[dict[str, Any]], object], *, _impl=impl, _dist=dist, _ver=version) -> None:
            if not isinstance(name, str) or not name:
                raise SpecError(f"plugin {_impl.plugin_name} registered a family with an invalid name {name!r}")
            if name in found:
                raise SpecError(
                    f"family {name!r} is registered twice: by {found[name].distribution} and by {_dist}"
                )
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


def spec_from_hf_configs(config: Mapping[str, Any], preprocessor_config: Mapping[str, Any]) -> dict[str, Any]:
    spec = plugin_manager().hook.mm_spec_from_hf_configs(config=config, preprocessor_config=preprocessor_config)
    if spec is None:
        model_type = config.get("model_type", "<none>") if isinstance(config, Mapping) else "<none>"
        raise SpecError(
            f"no installed family handles model_type {model_type!r}; installed: {sorted(families())}"
        )
    return spec


class FamilyHooks:
    """Typed facade over one pipeline's MmFamilyProcessor hooks.

    Wraps every call so that an exception that is not an ``MmError`` becomes an
    ``InternalError`` naming the family (and item, where the driver knows it).
    """

    def __init__(self, family: str, processor: object) -> None:
        from . import default_plugin

        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs.FamilySpecs)
        pm.register(default_plugin, name="mm_framework.defaults")
        try:
            pm.register(processor, name=f"family:{family}")
            pm.check_pending()
        except pluggy.PluginValidationError as e:
            raise SpecError(f"family {family!r}: invalid plugin: {e}") from None
        self.family = family
        self.processor = processor
        self._hook = pm.hook
        self.pm = pm

    def _call(self, what: str, fn: Callable[..., Any], item: int | None = None, **kwargs: Any) -> Any:
        try:
            result = fn(**kwargs)
        except MmError as e:
            raise e if item is None else e.at_item(item)
        except Exception as e:
            raise InternalError(
                f"family {self.family!r} raised {type(e).__name__} in {what}: {e}", item=item
            ) from e
        if result is None:
            raise InternalError(f"family {self.family!r}: {what} returned nothing", item=item)
        return result

    def capabilities(self) -> Capabilities:
        return self._call("mm_capabilities", self._hook.mm_capabilities)

    def decode_options(self) -> DecodeOptions:
        return self._call("mm_decode_options", self._hook.mm_decode_options)

    def decode(self, data: bytes, options: DecodeOptions, item: int) -> DecodedImage:
        return self._call("mm_decode", self._hook.mm_decode, item, data=data, options=options)

    def process_item(self, media: DecodedImage, item: int) -> ProcessedItem:
        out = self._call("mm_process_item", self._hook.mm_process_item, item, media=media)
        if not isinstance(out, ProcessedItem):
            raise InternalError(
                f"family {self.family!r}: mm_process_item returned {type(out).__name__}, not ProcessedItem",
                item=item,
            )
        return out

    def layout(self, input_ids: np.ndarray, geometries: Sequence[Geometry]) -> TokenLayout:
        out = self._call("mm_layout", self._hook.mm_layout, input_ids=input_ids, geometries=geometries)
        if not isinstance(out, TokenLayout):
            raise InternalError(f"family {self.family!r}: mm_layout returned {type(out).__name__}")
        return out

    def positions(
        self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Geometry]
    ) -> Positions:
        return self._call(
            "mm_positions", self._hook.mm_positions, input_len=input_len, offsets=offsets, geometries=geometries
        )

    def num_media_tokens(self, width: int, height: int) -> int:
        if not self._hook.mm_num_media_tokens.get_hookimpls():
            raise UnsupportedError(f"family {self.family!r} does not count tokens without pixels")
        return int(
            self._call("mm_num_media_tokens", self._hook.mm_num_media_tokens, width=width, height=height)
        )

    def model_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        return self._call("mm_model_kwargs", self._hook.mm_model_kwargs, items=items)

    def implemented(self) -> list[str]:
        """Hook names the family object itself implements."""
        return sorted(
            caller.name for caller in (self.pm.get_hookcallers(self.processor) or [])
        )
