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
family's ``mm_plan_item``; :func:`store` adds each image's stored uint8 pixels to it.
Any error anywhere rejects the whole request with one typed ``MmError``; the lowest
failing item index wins; nothing partial is returned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from blake3 import blake3

from . import par
from .cache import FeatureCache
from .carriers import (
    MAX_AUDIO_RATE, AudioHeader, Capabilities, DecodeOptions, ItemPlan, ItemTimings, OutputItem, ProcessedItem,
    Timings,
)
from .checks import check_int
from .errors import (
    InternalError, InvalidInputError, LayoutError, LimitExceededError, MmError, SpecError, UnsupportedError,
)
from .family import FamilyHooks, bind, hooks_for
from .layout import apply_layout
from .limits import Limits
from .media.hashing import content_hash
from .media.sources import Resolved
from .modality import ItemContext, Modality
from .plugins import modalities
from .prompt import Tokenize, check_no_stray_placeholder, default_ids, default_prompt, prompt_ids, split_placeholder
from .request import MmInput, Output, input_ids_array
from .text_prompt import check_text_prompt, expand_as_text, expands_as_text


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
    hashes: bool = True  # False: no item is hashed (its hash is None), so none is deduplicated or cached

    @classmethod
    def build(
        cls, spec: Mapping[str, Any], limits: Limits, cache: FeatureCache | None = None, hashes: bool = True
    ) -> Plan:
        return cls._of(bind(spec), limits, cache, hashes)

    @classmethod
    def _of(cls, hooks: FamilyHooks, limits: Limits, cache: FeatureCache | None, hashes: bool = True) -> Plan:
        resolved = hooks.resolved_spec()
        return cls(
            spec=resolved,
            spec_json=json.dumps(resolved, sort_keys=True),
            hooks=hooks,
            limits=limits,
            capabilities=hooks.capabilities(),
            decode_options=attrs.evolve(hooks.decode_options(), max_pixels=limits.max_image_pixels),
            cache=cache,
            hashes=hashes,
        )

    @property
    def cache_scope(self) -> tuple[str, DecodeOptions]:
        """What besides the content hash decides an item's features: spec and decoding."""
        return blake3(self.spec_json.encode()).hexdigest(), self.decode_options

    def modality(self, name: str, item: int | None = None) -> Modality:
        """The registered modality ``name``, refused unless this family takes it."""
        if name not in self.capabilities.modalities:
            raise UnsupportedError(f"family {self.hooks.family!r} does not take {name}", item=item)
        return modalities()[name]

    def for_item(self, inp: MmInput, index: int) -> Plan:
        """The plan item ``index`` of ``inp`` is processed under: this one, or for an item
        with processor options the family built from the spec with them applied."""
        item = inp.items[index]
        takes = self.capabilities.item_options.get(item.modality, {})
        unknown = [name for name in item.options if name not in takes]
        if unknown:
            raise SpecError(
                f"processor option {unknown[0]!r} is not one family {self.hooks.family!r} takes for "
                f"{item.modality} items; it takes: {', '.join(sorted(takes)) or 'none'}", item=index,
            )
        shared = self.capabilities.options_for_request.get(item.modality, {})
        options = {**{k: v for k, v in inp.options.items() if k in shared}, **item.options}
        if not options:
            return self
        fields = {**{shared[k]: v for k, v in inp.options.items() if k in shared},
                  **{takes[k]: v for k, v in item.options.items()}}
        try:
            if all(_same_json(v, self.spec.get(k, _ABSENT)) for k, v in fields.items()):
                # The spec's own values (a transformers processor passes its defaults with
                # every call): this plan, without building another (0.2 ms per item).
                return self
            hooks = hooks_for(json.dumps({**self.spec, **fields}, sort_keys=True))
        except TypeError:
            raise SpecError(f"processor options {options!r} are not JSON values", item=index) from None
        except SpecError as e:
            # A request-level option an item's own of that name does not replace is shown too.
            apart = {k: v for k, v in inp.options.items()
                     if k in item.options and k in shared and shared[k] != takes[k]}
            shown = ", ".join([*(f"{k}={v!r}" for k, v in options.items()),
                               *(f"{k}={v!r} (the request's)" for k, v in apart.items())])
            raise SpecError(f"processor option {shown} for this {item.modality}: {e.cause}", item=index) from None
        return Plan._of(hooks, self.limits, self.cache, self.hashes)


_ABSENT = object()


def _same_json(value: Any, spec_value: Any) -> bool:
    """Whether an option's ``value`` is the spec's value as JSON writes it, of the same type:
    ``True`` is not ``1`` and ``-0.0`` is not ``0.0``, so an option the family would refuse
    or read differently is never taken for the spec's. ``TypeError`` if not JSON."""
    return spec_value is not _ABSENT and type(value) is type(spec_value) and \
        json.dumps(value, sort_keys=True) == json.dumps(spec_value, sort_keys=True)


def admit(plan: Plan, inp: MmInput) -> None:
    """Request-level checks that need no I/O."""
    n = len(inp.items)
    if n == 0:
        raise InvalidInputError("multimodal request without media items (images, videos or items)")
    if n > plan.limits.max_items:
        raise LimitExceededError(f"multimodal request exceeds {plan.limits.max_items} media items (got {n})")
    for i, item in enumerate(inp.items):
        plan.modality(item.modality, item=i)
    taken = {name for names in plan.capabilities.options_for_request.values() for name in names}
    unknown = sorted(set(inp.options) - taken)
    if unknown:
        raise SpecError(
            f"processor option {unknown[0]!r} is not one family {plan.hooks.family!r} takes; "
            f"it takes: {', '.join(sorted(taken)) or 'none'}"
        )
    for i in range(n):
        plan.for_item(inp, i)
    # A default prompt the family cannot build fails before any I/O, as does a text prompt without text.
    check_text_prompt(inp, plan.hooks.family, plan.capabilities)
    default_ids(inp, plan.hooks.family, plan.capabilities)


def check_size_request(plan: Plan, frames: int | None, fps: float | None) -> None:
    """A pixel-free question about a clip (``frames``, ``fps``) needs a family that takes
    video and the clip's frame count."""
    if frames is not None or fps is not None:
        if not plan.capabilities.video:
            raise UnsupportedError(f"family {plan.hooks.family!r} does not take video: frames and fps describe a clip")
    if frames is None and fps is not None:
        raise InvalidInputError(f"fps={fps!r} without frames: a clip's token count needs its source frame count")


# The rate a length in seconds is counted at unless the caller names one: the rate of the
# Whisper-style families, whose count from a header at their own rate needs no resampling.
AUDIO_RATE = 16000


def audio_size_request(
    plan: Plan, width: int | None, height: int | None, frames: int | None, fps: float | None, seconds: float,
    sample_rate: int,
) -> AudioHeader:
    """The header of a pixel-free question about an audio item of ``seconds`` at
    ``sample_rate`` Hz (mono; the count does not depend on channels): it needs a family that
    takes audio and no image or clip size beside it."""
    if "audio" not in plan.capabilities.modalities:
        raise UnsupportedError(f"family {plan.hooks.family!r} does not take audio: seconds describe an audio item")
    if any(v is not None for v in (width, height, frames, fps)):
        raise InvalidInputError("seconds describe an audio item: give no width, height, frames or fps with them")
    rate = check_int(sample_rate, "sample_rate", minimum=1, maximum=MAX_AUDIO_RATE, error=InvalidInputError)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not np.isfinite(seconds) or seconds <= 0:
        raise InvalidInputError(f"seconds must be a positive finite number, got {seconds!r}")
    n = round(seconds * rate)
    if n < 1:
        raise InvalidInputError(f"{seconds!r} seconds at {rate} Hz is less than one sample")
    return AudioHeader(rate, 1, n)


def takers(plan: Plan, inp: MmInput) -> list[Any]:
    """Each item's modality's ``take_decoded``, for :mod:`.media.sources`."""
    return [plan.modality(it.modality).take_decoded for it in inp.items]


def _hash(src: Resolved) -> int:
    return content_hash(src) if isinstance(src, (bytes, bytearray, memoryview)) else src.hash


def _hashes(plan: Plan, resolved: Sequence[Resolved]) -> tuple[list[int | None], list[float]]:
    if not plan.hashes:
        return [None] * len(resolved), [0.0] * len(resolved)

    def one(i: int, src: Resolved) -> tuple[int, float]:
        t0 = time.perf_counter()
        return _hash(src), _ms(t0)

    pairs = par.try_map(one, resolved)
    return [h for h, _ in pairs], [t for _, t in pairs]


@attrs.frozen
class _Made:
    """One distinct item's result: features, its decoded size, where the time went."""

    item: ProcessedItem
    size: tuple[int, int] | None
    frames: int | None = None
    decode_ms: float = 0.0
    process_ms: float = 0.0
    cached: bool = False


def _context(plan: Plan, index: int) -> ItemContext:
    return ItemContext(plan.hooks, plan.limits, plan.decode_options, index)


def decode(plan: Plan, modality: Modality, src: Resolved, index: int) -> tuple[Any, Any]:
    """One item decoded and its header, the size the family would process it at checked."""
    try:
        media = modality.decode(src, _context(plan, index))
        header = modality.header_of(media)
    except MmError as e:
        raise e.at_item(index) from None
    check_processed(plan, modality, header, media, index)
    return media, header


def check_processed(plan: Plan, modality: Modality, header: Any, media: Any, index: int | None = None) -> ItemPlan:
    """The family's plan of an item, refused (before any allocation) when the family would
    process it past the limits."""
    planned = plan.hooks.plan_item(header, item=index)
    try:
        modality.check_processed(header, planned, media, plan.limits)
    except MmError as e:
        raise e if index is None else e.at_item(index)
    return planned


def _make(plan: Plan, modality: Modality, src: Resolved, index: int) -> _Made:
    t0 = time.perf_counter()
    media, header = decode(plan, modality, src, index)
    t1 = time.perf_counter()
    item = plan.hooks.process_item(media, index)
    declared = plan.capabilities.outputs.get(modality.name)
    if declared is not None:
        try:
            declared.check(item)
        except MmError as e:
            raise InternalError(f"family {plan.hooks.family!r}: {e.cause}", item=index) from None
    return _Made(item, modality.size_of(header), modality.frames_of(media), (t1 - t0) * 1000.0, _ms(t1))


def _made(plan: Plan, modality: Modality, src: Resolved, digest: int | None, index: int) -> _Made:
    if plan.cache is None:
        return _make(plan, modality, src, index)
    key = (*plan.cache_scope, modality.name, digest)
    entry, hit = plan.cache.get_or_compute(key, lambda: _make(plan, modality, src, index))
    return attrs.evolve(entry, decode_ms=0.0, process_ms=0.0, cached=True) if hit else entry


def run(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> Output:
    """Every step after I/O, in order; ``resolved`` are the request's sources, fetched."""
    t_start = time.perf_counter()
    items, item_times = processed(plan, inp, resolved, fetch_ms)
    return _finish(plan, inp, tokenize, items, item_times, t_start, sum(fetch_ms))


def processed(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], fetch_ms: Sequence[float]
) -> tuple[list[OutputItem], list[ItemTimings]]:
    """:func:`run`'s items, in input order, and their timings: its steps before the prompt."""
    modality_names = [it.modality for it in inp.items]
    plans = [plan.for_item(inp, i) for i in range(len(inp.items))]
    hashes, hash_ms = _hashes(plan, resolved)
    # (modality, the plan's spec, digest): equal keys are the same work. Unhashed, each item is its own.
    keys = [(m, p.spec_json, ("item", i) if h is None else h)
            for i, (m, p, h) in enumerate(zip(modality_names, plans, hashes))]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}  # key -> its first index
    distinct = sorted(first.values())

    def make(_: int, i: int) -> _Made:
        return _made(plans[i], plan.modality(modality_names[i]), resolved[i], hashes[i], i)

    made = dict(zip(distinct, par.try_map(make, distinct)))
    per_item = [made[first[k]] for k in keys]
    items = [
        OutputItem(m.item.feature, m.item.aux, h, mod, m.item.geometry, m.size, m.item.size, m.frames)
        for m, h, mod in zip(per_item, hashes, modality_names)
    ]
    item_times = [
        ItemTimings(f, hm, *((m.decode_ms, m.process_ms, m.cached) if first[k] == i else (0.0, 0.0, True)))
        for i, (m, k, f, hm) in enumerate(zip(per_item, keys, fetch_ms, hash_ms))
    ]
    return items, item_times


def _finish(
    plan: Plan, inp: MmInput, tokenize: Tokenize | None, items: list[OutputItem], item_times: list[ItemTimings],
    t_start: float, fetch_ms: float,
) -> Output:
    """The prompt steps, then the output with its items in prompt order."""
    return _finish_ordered(plan, inp, tokenize, items, item_times, t_start, fetch_ms)[0]


def _finish_ordered(
    plan: Plan, inp: MmInput, tokenize: Tokenize | None, items: list[OutputItem], item_times: list[ItemTimings],
    t_start: float, fetch_ms: float,
) -> tuple[Output, list[int]]:
    """:func:`_finish`, and the item number of each output item."""
    geometries = [it.geometry for it in items]
    modality_names = [it.modality for it in items]
    family, caps = plan.hooks.family, plan.capabilities
    ids = None if expands_as_text(caps, modality_names) else prompt_ids(inp, tokenize, family, caps)
    t0 = time.perf_counter()
    if ids is None:  # tokenizing is part of expanding, so it counts as layout time
        expanded = expand_as_text(inp, tokenize, family, caps, modality_names,
                                  lambda i: plan.hooks.expansion_text(modality_names[i], geometries[i], geometries))
    else:
        check_no_stray_placeholder(ids, caps, modality_names)
        try:
            expanded = apply_layout(ids, plan.hooks.layout(ids, geometries, modality_names), len(items))
        except LayoutError as e:
            why = split_placeholder(inp, ids, caps, modality_names)
            if why is None:
                raise
            raise why from e
    t1 = time.perf_counter()
    positions = plan.hooks.positions(len(expanded.input_ids), expanded.offsets, geometries, modality_names)
    t2 = time.perf_counter()
    order = sorted(range(len(items)), key=lambda i: expanded.offsets[i][0])
    timings = _timings([item_times[i] for i in order], (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, fetch_ms + _ms(t_start))
    out = Output(
        expanded.input_ids, [items[i] for i in order], [expanded.offsets[i] for i in order], positions,
        plan.spec_json, timings,
    )
    return out, order


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


def media_tokens(plan: Plan, modality: str, header: Any) -> int:
    """The tokens one item with ``header`` expands to: the span the family's layout gives
    it in a default prompt of that one item (what processing it would give)."""
    mod = plan.modality(modality)
    if modality in plan.capabilities.text_prompts:
        raise UnsupportedError(f"a {modality}'s token count in family {plan.hooks.family!r} depends on the "
                               f"tokenizer (its expansion is text): count a whole text prompt with one")
    planned = check_processed(plan, mod, header, None)
    ids = input_ids_array(default_prompt(plan.hooks.family, plan.capabilities.placeholders, [modality]))
    (start, end), = apply_layout(ids, plan.hooks.layout(ids, [planned.geometry], [modality]), 1).offsets
    return end - start + 1


def count(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> Output:
    """:func:`run` without pixels: the same ids, offsets and positions, no features."""
    return _count(plan, inp, resolved, tokenize, fetch_ms)[0]


def _count(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> tuple[Output, list[int]]:
    t_start = time.perf_counter()
    hashes, hash_ms = _hashes(plan, resolved)

    def one(i: int, src: Resolved) -> OutputItem:
        item_plan, mod = plan.for_item(inp, i), plan.modality(inp.items[i].modality)
        try:
            header = mod.probe(src, _context(item_plan, i))
        except MmError as e:
            raise e.at_item(i) from None
        p = item_plan.hooks.plan_item(header, item=i)
        return OutputItem(None, {}, hashes[i], mod.name, p.geometry, mod.size_of(header), p.size)

    items = par.try_map(one, resolved)
    item_times = [ItemTimings(f, hm, 0.0, 0.0, False) for f, hm in zip(fetch_ms, hash_ms)]
    return _finish_ordered(plan, inp, tokenize, items, item_times, t_start, sum(fetch_ms))


def decoded(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> tuple[Output, list[Any]]:
    """:func:`count`, plus each item decoded as the family will process it (a
    ``DecodedImage``, a ``VideoClip``, ...), in the output's item order."""
    out, order = _count(plan, inp, resolved, tokenize, fetch_ms)

    def one(_: int, i: int) -> Any:
        return decode(plan.for_item(inp, i), plan.modality(inp.items[i].modality), resolved[i], i)[0]

    return out, par.try_map(one, order)


def store(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> tuple[Output, list[np.ndarray]]:
    """:func:`count`, plus each item's ``mm_stored_pixels`` in the output's item order: the
    uint8 arrays a dataset keeps instead of features (``mm_features_from_pixels`` rebuilds
    them). Images only."""
    other = next((it.modality for it in inp.items if it.modality != "image"), None)
    if other is not None:
        raise UnsupportedError(f"stored pixels are for image items; this request has {other} items")
    out, order = _count(plan, inp, resolved, tokenize, fetch_ms)
    image = plan.modality("image")

    def one(_: int, i: int) -> np.ndarray:
        item_plan = plan.for_item(inp, i)
        return item_plan.hooks.stored_pixels(decode(item_plan, image, resolved[i], i)[0], i)

    return out, par.try_map(one, order)
