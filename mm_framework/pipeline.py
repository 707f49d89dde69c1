"""``pipeline_from_spec`` and the immutable, thread-safe ``Pipeline`` facade."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping
from typing import Any

from . import driver, fetch, plugins
from .carriers import Capabilities, DecodeOptions, MmInput, Output
from .errors import InternalError, MmError, SpecError
from .limits import Limits


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


class Pipeline:
    """One family built from one spec. Immutable; share it across threads and loops.

    Pickles as its spec, limits and fetch policy, and rebuilds itself on load (through
    the installed plugins of the receiving process).
    """

    __slots__ = ("_spec", "_family", "_hooks", "_limits", "_policy", "_decode_options", "_capabilities")


    def __init__(self, spec: Mapping[str, Any], *, limits: Limits | None = None, fetch_policy: fetch.FetchPolicy | None = None) -> None:
        spec = parse_spec(spec)
        family = spec["family"]
        known = plugins.families()
        info = known.get(family)
        if info is None:
            raise SpecError(f"mm spec: unknown family {family!r}; installed families: {sorted(known) or 'none'}")
        params = {k: v for k, v in spec.items() if k != "family"}
        try:
            processor = info.factory(params)
        except MmError:
            raise
        except Exception as e:
            raise InternalError(f"family {family!r} factory raised {type(e).__name__}: {e}") from e
        hooks = plugins.FamilyHooks(family, processor)
        limits = limits if limits is not None else Limits()
        set_ = object.__setattr__
        set_(self, "_spec", spec)
        set_(self, "_family", family)
        set_(self, "_hooks", hooks)
        set_(self, "_limits", limits)
        set_(self, "_policy", fetch_policy)
        set_(self, "_capabilities", hooks.capabilities())
        set_(self, "_decode_options", driver.decode_options_for(hooks, limits))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Pipeline is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._spec, self._limits, self._policy))

    def __repr__(self) -> str:
        return f"Pipeline(family={self._family!r})"

    @property
    def spec(self) -> dict[str, Any]:
        return copy.deepcopy(self._spec)

    @property
    def family(self) -> str:
        return self._family

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def fetch_policy(self) -> fetch.FetchPolicy | None:
        return self._policy

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def decode_options(self) -> DecodeOptions:
        """How this pipeline decodes: the family's choices plus the pixel limit."""
        return self._decode_options

    @property
    def hooks(self) -> plugins.FamilyHooks:
        return self._hooks

    def process(self, inp: MmInput, *, tokenize: driver.Tokenize | None = None) -> Output:
        """Run one request on the calling thread (items fan out on the shared pool)."""
        driver.check_request(inp, self._limits)
        datas = fetch.resolve_sources(inp.images, limits=self._limits, policy=self._policy)
        return self._finish(inp, datas, tokenize)

    async def process_async(self, inp: MmInput, *, tokenize: driver.Tokenize | None = None) -> Output:
        """Same result as :meth:`process`; the event loop is never blocked."""
        driver.check_request(inp, self._limits)
        datas = await fetch.resolve_sources_async(inp.images, limits=self._limits, policy=self._policy)
        return await asyncio.to_thread(self._finish, inp, datas, tokenize)

    def _finish(self, inp: MmInput, datas: list[bytes], tokenize: driver.Tokenize | None) -> Output:
        """Everything after I/O: per-item work on the fan-out seam, then the prompt."""
        processed = driver.process_items(self._hooks, datas, self._decode_options)
        return driver.assemble(self._hooks, inp, processed, tokenize, self._capabilities.id_range)

    def num_media_tokens(self, width: int, height: int) -> int:
        """Tokens one ``width`` x ``height`` image expands to, without any pixels."""
        return self._hooks.num_media_tokens(width, height)


def _rebuild(spec: dict[str, Any], limits: Limits, policy: fetch.FetchPolicy | None) -> Pipeline:
    return Pipeline(spec, limits=limits, fetch_policy=policy)


def pipeline_from_spec(
    spec: str | bytes | Mapping[str, Any], *, limits: Limits | None = None, fetch_policy: fetch.FetchPolicy | None = None
) -> Pipeline:
    """Build a pipeline from ``{"family": ..., **resolved params}`` (a dict or JSON text)."""
    return Pipeline(spec, limits=limits, fetch_policy=fetch_policy)
