"""``pipeline_from_spec`` and the immutable, thread-safe ``Pipeline``: settings and dispatch.

A pipeline holds a :class:`~.driver.Plan` (the spec bound to its family) and its fetch
policy. It only decides where each part of a request runs: the driver's request checks
and I/O on the caller (or, for :meth:`Pipeline.process_async`, on its event loop), and
the driver's CPU steps on the caller's thread (a worker thread for async callers), whose
items fan out on the ``par`` seam.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import driver
from .carriers import Capabilities, DecodeOptions, MmInput, Output
from .family import FamilyHooks, parse_spec
from .limits import Limits
from .media.policy import FetchPolicy
from .media.sources import resolve_sources, resolve_sources_async


class Pipeline:
    """One family built from one spec. Immutable; share it across threads and loops.

    Pickles as its spec, limits and fetch policy, and rebuilds itself on load (through
    the installed plugins of the receiving process).
    """

    __slots__ = ("_plan", "_policy")

    def __init__(
        self, spec: str | bytes | Mapping[str, Any], *, limits: Limits | None = None, fetch_policy: FetchPolicy | None = None
    ) -> None:
        object.__setattr__(self, "_plan", driver.Plan.build(parse_spec(spec), limits if limits is not None else Limits()))
        object.__setattr__(self, "_policy", fetch_policy)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Pipeline is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._plan.spec, self._plan.limits, self._policy))

    def __repr__(self) -> str:
        return f"Pipeline(family={self.family!r})"

    @property
    def spec(self) -> dict[str, Any]:
        return copy.deepcopy(self._plan.spec)

    @property
    def family(self) -> str:
        return self._plan.hooks.family

    @property
    def limits(self) -> Limits:
        return self._plan.limits

    @property
    def fetch_policy(self) -> FetchPolicy | None:
        return self._policy

    @property
    def capabilities(self) -> Capabilities:
        return self._plan.capabilities

    @property
    def decode_options(self) -> DecodeOptions:
        """How this pipeline decodes: the family's choices plus the pixel limit."""
        return self._plan.decode_options

    @property
    def hooks(self) -> FamilyHooks:
        return self._plan.hooks

    def process(self, inp: MmInput, *, tokenize: driver.Tokenize | None = None) -> Output:
        """Run one request on the calling thread (items fan out on the shared pool)."""
        driver.admit(self._plan, inp)
        datas = resolve_sources(inp.images, limits=self._plan.limits, policy=self._policy)
        return driver.run(self._plan, inp, datas, tokenize)

    async def process_async(self, inp: MmInput, *, tokenize: driver.Tokenize | None = None) -> Output:
        """Same result as :meth:`process`; the event loop is never blocked."""
        driver.admit(self._plan, inp)
        datas = await resolve_sources_async(inp.images, limits=self._plan.limits, policy=self._policy)
        return await asyncio.to_thread(driver.run, self._plan, inp, datas, tokenize)

    def num_media_tokens(self, width: int, height: int) -> int:
        """Tokens one ``width`` x ``height`` image expands to, without any pixels."""
        return self._plan.hooks.num_media_tokens(width, height)

    def model_kwargs(self, out: Output) -> dict[str, np.ndarray]:
        """The model runner's keyword tensors for ``out``'s items, as this family defines them."""
        return self._plan.hooks.model_kwargs(out.items)


def _rebuild(spec: dict[str, Any], limits: Limits, policy: FetchPolicy | None) -> Pipeline:
    return Pipeline(spec, limits=limits, fetch_policy=policy)


def pipeline_from_spec(
    spec: str | bytes | Mapping[str, Any], *, limits: Limits | None = None, fetch_policy: FetchPolicy | None = None
) -> Pipeline:
    """Build a pipeline from ``{"family": ..., **resolved params}`` (a dict or JSON text)."""
    return Pipeline(spec, limits=limits, fetch_policy=fetch_policy)
