"""The request driver: the one model-independent control flow every request runs.

A :class:`Plan` is what a pipeline fixes when it is built (the bound family, limits,
decode options, the feature cache). Per request, :func:`admit` checks the request before
any I/O; the pipeline then resolves its sources (:mod:`.media`, sync or async), and
:func:`run` does every step after I/O, in order:

hash every item -> per distinct item on the fan-out seam (cache, or decode -> process)
-> prompt ids -> layout -> apply -> positions -> :class:`~.request.Output`.

Identical items of one request (same content hash) are decoded and processed once; with
a :class:`~.cache.FeatureCache`, identical items of any request under the same spec are.
:func:`count` is the same flow without pixels: sizes from the headers, geometry from the
family's ``mm_plan_item``. Any error anywhere rejects the whole request with one typed
``MmError``; the lowest failing item index wins; nothing partial is returned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from blake3 import blake3

from . import par
from .cache import FeatureCache
from .carriers import Capabilities, DecodeOptions, ProcessedItem
from .errors import InvalidInputError, LimitExceededError, MmError
from .family import FamilyHooks, bind
from .layout import apply_layout
from .limits import Limits
from .media.decode import decoded_size
from .media.decoded import DecodedSource
from .media.hashing import content_hash
from .media.sources import Resolved
from .prompt import Tokenize, prompt_ids
from .request import ItemTimings, MmInput, Output, OutputItem, Timings


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


@attrs.frozen
class Plan:
    """A spec bound to its family, with everything fixed at build time."""

    spec: dict[str, Any] = attrs.field(repr=False)
    spec_json: str = attrs.field(repr=False)
    hooks: FamilyHooks
    limits: Limits
    capabilities: Capabilities
    decode_options: DecodeOptions
    cache: FeatureCache | None = None

    @classmethod
    def build(cls, spec: Mapping[str, Any], limits: Limits, cache: FeatureCache | None = None) -> Plan:
        hooks = bind(spec)
        return cls(
            spec=dict(spec),
            spec_json=json.dumps(spec, sort_keys=True),
            hooks=hooks,
            limits=limits,
            capabilities=hooks.capabilities(),
            decode_options=attrs.evolve(hooks.decode_options(), max_pixels=limits.max_image_pixels),
            cache=cache,
        )

    @property
    def cache_scope(self) -> tuple[str, DecodeOptions]:
        """What besides the content hash decides an item's features: spec and decoding."""
        return blake3(self.spec_json.encode()).hexdigest(), self.decode_options


def admit(plan: Plan, inp: MmInput) -> None:
    """Request-level checks that need no I/O."""
    n = len(inp.images)
    if n == 0:
        raise InvalidInputError("multimodal request without image sources")
    if n > plan.limits.max_items:
        raise LimitExceededError(f"multimodal request exceeds {plan.limits.max_items} media items (got {n})")


def _hash(src: Resolved) -> int:
    return src.hash if isinstance(src, DecodedSource) else content_hash(src)


def _hashes(resolved: Sequence[Resolved]) -> tuple[list[int], list[float]]:
    def one(i: int, src: Resolved) -> tuple[int, float]:
        t0 = time.perf_counter()
        return _hash(src), _ms(t0)

    pairs = par.try_map(one, resolved)
    return [h for h, _ in pairs], [t for _, t in pairs]


@attrs.frozen
class _Made:
    """One distinct item's result: features, its decoded size, where the time went."""

    item: ProcessedItem
    size: tuple[int, int]
    decode_ms: float = 0.0
    process_ms: float = 0.0
    cached: bool = False


def _make(plan: Plan, src: Resolved, index: int) -> _Made:
    t0 = time.perf_counter()
    if isinstance(src, DecodedSource):
        try:
            media = src.to_rgb(plan.decode_options)
        except MmError as e:
            raise e.at_item(index) from None
    else:
        media = plan.hooks.decode(src, plan.decode_options, index)
    t1 = time.perf_counter()
    item = plan.hooks.process_item(media, index)
    return _Made(item, (media.width, media.height), (t1 - t0) * 1000.0, _ms(t1))


def _made(plan: Plan, src: Resolved, digest: int, index: int) -> _Made:
    if plan.cache is None:
        return _make(plan, src, index)
    entry, hit = plan.cache.get_or_compute((*plan.cache_scope, digest), lambda: _make(plan, src, index))
    return attrs.evolve(entry, decode_ms=0.0, process_ms=0.0, cached=True) if hit else entry


def run(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> Output:
    """Every step after I/O, in order; ``resolved`` are the request's sources, fetched."""
    t_start = time.perf_counter()
    hashes, hash_ms = _hashes(resolved)
    first = {h: i for i, h in reversed(list(enumerate(hashes)))}  # digest -> its first index
    distinct = sorted(first.values())
    made = dict(zip(distinct, par.try_map(lambda _, i: _made(plan, resolved[i], hashes[i], i), distinct)))
    ids = prompt_ids(inp, tokenize, plan.capabilities.id_range)
    per_item = [made[first[h]] for h in hashes]
    geometries = [m.item.geometry for m in per_item]
    t0 = time.perf_counter()
    expanded = apply_layout(ids, plan.hooks.layout(ids, geometries), len(per_item))
    t1 = time.perf_counter()
    positions = plan.hooks.positions(len(expanded.input_ids), expanded.offsets, geometries)
    t2 = time.perf_counter()
    items = [
        OutputItem(m.item.feature, m.item.aux, h, geometry=m.item.geometry, size=m.size, processed_size=m.item.size)
        for m, h in zip(per_item, hashes)
    ]
    item_times = [
        ItemTimings(f, hm, *((m.decode_ms, m.process_ms, m.cached) if first[h] == i else (0.0, 0.0, True)))
        for i, (m, h, f, hm) in enumerate(zip(per_item, hashes, fetch_ms, hash_ms))
    ]
    timings = _timings(item_times, (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, sum(fetch_ms) + _ms(t_start))
    return Output(expanded.input_ids, items, expanded.offsets, positions, plan.spec_json, timings)


def _timings(items: list[ItemTimings], layout_ms: float, positions_ms: float, total_ms: float) -> Timings:
    return Timings(
        fetch_ms=sum(t.fetch_ms for t in items),
        hash_ms=sum(t.hash_ms for t in items),
        decode_ms=sum(t.decode_ms for t in items),
        process_ms=sum(t.process_ms for t in items),
        layout_ms=layout_ms,
        positions_ms=positions_ms,
        total_ms=total_ms,
        items=items,
    )


def count(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> Output:
    """:func:`run` without pixels: the same ids, offsets and positions, no features."""
    t_start = time.perf_counter()
    hashes, hash_ms = _hashes(resolved)

    def one(i: int, src: Resolved) -> tuple[tuple[int, int], Any]:
        try:
            size = src.size(plan.decode_options) if isinstance(src, DecodedSource) else decoded_size(src, plan.decode_options)
        except MmError as e:
            raise e.at_item(i) from None
        return size, plan.hooks.plan_item(*size, item=i)

    planned = par.try_map(one, resolved)
    ids = prompt_ids(inp, tokenize, plan.capabilities.id_range)
    geometries = [p.geometry for _, p in planned]
    t0 = time.perf_counter()
    expanded = apply_layout(ids, plan.hooks.layout(ids, geometries), len(planned))
    t1 = time.perf_counter()
    positions = plan.hooks.positions(len(expanded.input_ids), expanded.offsets, geometries)
    t2 = time.perf_counter()
    items = [
        OutputItem(None, {}, h, geometry=p.geometry, size=size, processed_size=p.size)
        for (size, p), h in zip(planned, hashes)
    ]
    item_times = [ItemTimings(f, hm, 0.0, 0.0, False) for f, hm in zip(fetch_ms, hash_ms)]
    timings = _timings(item_times, (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, sum(fetch_ms) + _ms(t_start))
    return Output(expanded.input_ids, items, expanded.offsets, positions, plan.spec_json, timings)
