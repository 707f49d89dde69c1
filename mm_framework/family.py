"""The family facade: a spec bound to its family, and every family hook behind typed methods.

:func:`bind` is the one place a spec meets its family: it parses the spec, finds the
family among the registered plugins, runs its factory and registers the resulting
processor on a small plugin manager of its own, next to the built-in defaults
(:mod:`.defaults`, registered ``trylast``). The driver calls hooks only through
:class:`FamilyHooks`, whose :meth:`~FamilyHooks._call` turns anything that is not an
``MmError`` into an ``InternalError`` naming the family (and item, where known).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pluggy

from . import defaults, hookspecs, plugins
from .carriers import (
    AudioHeader, Capabilities, ClipHeader, DecodedImage, DecodeOptions, Geometry, ItemPlan, OutputItem, Positions,
    ProcessedItem,
)
from .checks import is_int
from .errors import InternalError, MmError, SpecError
from .layout import TokenLayout


def parse_spec(spec: str | bytes | bytearray | Mapping[str, Any]) -> dict[str, Any]:
    """A spec as a fresh dict with a string ``"family"``; JSON text is parsed."""
    if isinstance(spec, (str, bytes, bytearray)):
        try:
            spec = json.loads(spec)
        except (ValueError, UnicodeDecodeError) as e:
            raise SpecError(f"mm spec: {e}") from None
    if not isinstance(spec, Mapping):
        raise SpecError(f"mm spec: expected a JSON object, got {type(spec).__name__}")
    spec = copy.deepcopy(dict(spec))
    family = spec.get("family")
    if not isinstance(family, str):
        raise SpecError(f"mm spec: missing or non-string field 'family' (got {family!r})")
    return spec


def _guarded(
    family: str, what: str, fn: Callable[..., Any], item: int | None = None, none_ok: bool = False, **kwargs: Any
) -> Any:
    """``fn(**kwargs)``: an ``MmError`` passes (attributed to ``item``), anything else is a bug,
    and so is no result unless ``none_ok``."""
    try:
        result = fn(**kwargs)
    except MmError as e:
        raise e if item is None else e.at_item(item)
    except Exception as e:
        raise InternalError(f"family {family!r} raised {type(e).__name__} in {what}: {e}", item=item) from e
    if result is None and not none_ok:
        raise InternalError(f"family {family!r}: {what} returned nothing", item=item)
    return result


def bind(spec: Mapping[str, Any]) -> FamilyHooks:
    """The family processor of ``spec`` (already parsed) behind its typed facade."""
    family = spec["family"]
    known = plugins.families()
    info = known.get(family)
    if info is None:
        installed = sorted(known) or "none"
        raise SpecError(f"mm spec: unknown family {family!r}; installed families: {installed}{plugins.hidden_note()}")
    params = {k: v for k, v in spec.items() if k != "family"}
    return FamilyHooks(family, _guarded(family, "its factory", info.factory, params=params), spec)


def hooks_for(spec_json: str) -> FamilyHooks:
    """The facade of a resolved spec given as JSON, shared by everything that asks for it
    (an unpickled :class:`~.carriers.Output` finding its family again, an item with
    processor options): built once per spec and plugin registry, so a family registered
    anew is the one used."""
    return _bound(spec_json, plugins.generation())


@functools.lru_cache(maxsize=64)
def _bound(spec_json: str, _generation: int) -> FamilyHooks:
    return bind(parse_spec(spec_json))


class FamilyHooks:
    """Typed facade over one pipeline's MmFamilyProcessor hooks."""

    def __init__(self, family: str, processor: object, spec: Mapping[str, Any]) -> None:
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs.FamilySpecs)
        pm.register(defaults.FamilyDefaults(family, spec, processor), name="mm_framework.defaults")
        try:
            pm.register(processor, name=f"family:{family}")
            pm.check_pending()
        except pluggy.PluginValidationError as e:
            raise SpecError(f"family {family!r}: invalid plugin: {e}") from None
        own = {caller.name for caller in (pm.get_hookcallers(processor) or [])}
        missing = [name for name in defaults.REQUIRED if name not in own]
        if missing:
            raise SpecError(f"family {family!r}: invalid plugin: it does not implement {', '.join(missing)}")
        paired = [name for name in defaults.TOGETHER if name in own]
        #: Whether the family stores uint8 pixels (``mm_stored_pixels``) for datasets.
        self.stores_pixels = bool(paired)
        if paired and len(paired) != len(defaults.TOGETHER):
            raise SpecError(
                f"family {family!r}: invalid plugin: {' and '.join(defaults.TOGETHER)} come together; it implements "
                f"only {paired[0]}"
            )
        self.family = family
        self.processor = processor
        self._hook = pm.hook
        self._pm = pm

    def _call(self, name: str, item: int | None = None, **kwargs: Any) -> Any:
        return _guarded(self.family, name, getattr(self._hook, name), item, **kwargs)

    def capabilities(self) -> Capabilities:
        return self._call("mm_capabilities")

    def resolved_spec(self) -> dict[str, Any]:
        """The family's complete spec (by default the spec as given)."""
        out = self._call("mm_resolved_spec")
        if not isinstance(out, dict) or out.get("family") != self.family:
            raise InternalError(f"family {self.family!r}: mm_resolved_spec must return a dict with its family")
        return out

    def decode_options(self) -> DecodeOptions:
        return self._call("mm_decode_options")

    def decode(self, data: bytes, options: DecodeOptions, item: int) -> DecodedImage:
        return self._call("mm_decode", item, data=data, options=options)

    def _processed(self, name: str, item: int | None, **kwargs: Any) -> ProcessedItem:
        out = self._call(name, item, **kwargs)
        if not isinstance(out, ProcessedItem):
            what = type(out).__name__
            raise InternalError(f"family {self.family!r}: {name} returned {what}, not ProcessedItem", item=item)
        return out

    def process_item(self, media: DecodedImage, item: int) -> ProcessedItem:
        return self._processed("mm_process_item", item, media=media)

    def sample_frames(self, header: ClipHeader, item: int) -> list[int] | None:
        out = self._before_decode("mm_sample_frames", header, item)
        return None if out is None else list(out)

    def audio_frames(self, header: AudioHeader, item: int) -> int | None:
        out = self._before_decode("mm_audio_frames", header, item)
        if out is not None and (not is_int(out) or out <= 0):
            raise InternalError(f"family {self.family!r}: mm_audio_frames returned {out!r}, not a positive int",
                                item=item)
        return out

    def _before_decode(self, name: str, header: Any, item: int) -> Any:
        """A hook a modality calls while it decodes: a family's ``MmError`` is the item's, any
        other exception an ``InternalError`` naming the hook."""
        try:
            return getattr(self._hook, name)(header=header)
        except MmError as e:
            raise e.at_item(item)
        except Exception as e:
            why = f"{type(e).__name__} in {name}: {e}"
            raise InternalError(f"family {self.family!r} raised {why}", item=item) from e

    def layout(self, input_ids: np.ndarray, geometries: Sequence[Geometry], modalities: Sequence[str]) -> TokenLayout:
        out = self._call("mm_layout", input_ids=input_ids, geometries=geometries, modalities=modalities)
        if not isinstance(out, TokenLayout):
            raise InternalError(f"family {self.family!r}: mm_layout returned {type(out).__name__}")
        return out

    def positions(
        self,
        input_len: int,
        offsets: Sequence[tuple[int, int]],
        geometries: Sequence[Geometry],
        modalities: Sequence[str],
    ) -> Positions:
        return self._call(
            "mm_positions", input_len=input_len, offsets=offsets, geometries=geometries, modalities=modalities
        )

    def expansion_text(self, modality: str, geometry: Geometry, geometries: Sequence[Geometry]) -> str | None:
        out = _guarded(self.family, "mm_expansion_text", self._hook.mm_expansion_text, None, True,
                       modality=modality, geometry=geometry, geometries=tuple(geometries))
        if out is not None and not isinstance(out, str):
            raise InternalError(f"family {self.family!r}: mm_expansion_text returned {type(out).__name__}")
        return out

    def plan_item(self, header: Any, item: int | None = None) -> ItemPlan:
        out = self._call("mm_plan_item", item, header=header)
        if not isinstance(out, ItemPlan):
            raise InternalError(f"family {self.family!r}: mm_plan_item returned {type(out).__name__}", item=item)
        return out

    def stored_pixels(self, media: DecodedImage, item: int) -> np.ndarray:
        out = self._call("mm_stored_pixels", item, media=media)
        if not isinstance(out, np.ndarray) or out.dtype != np.uint8:
            what = type(out).__name__
            raise InternalError(f"family {self.family!r}: mm_stored_pixels returned {what}, not uint8", item=item)
        return out

    def features_from_pixels(self, pixels: np.ndarray, item: int | None = None) -> ProcessedItem:
        return self._processed("mm_features_from_pixels", item, pixels=pixels)

    def model_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        return self._call("mm_model_kwargs", items=items)

    def hf_image_outputs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray] | None:
        # No implementation answers None: the family does not describe its image processor.
        return _guarded(self.family, "mm_hf_image_outputs", self._hook.mm_hf_image_outputs, none_ok=True, items=items)

    def hf_video_outputs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray] | None:
        # No implementation answers None: the family does not describe its video processor.
        return _guarded(self.family, "mm_hf_video_outputs", self._hook.mm_hf_video_outputs, none_ok=True, items=items)

    def implemented(self) -> list[str]:
        """Hook names the family object itself implements."""
        return sorted(caller.name for caller in (self._pm.get_hookcallers(self.processor) or []))
