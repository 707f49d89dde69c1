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
from .carriers import Capabilities, DecodedImage, DecodeOptions, ItemTimings, OutputItem, ProcessedItem, Timings
from .errors import InvalidInputError, LayoutError, LimitExceededError, MmError, UnsupportedError
from .family import FamilyHooks, bind
from .layout import apply_layout
from .limits import Limits
from .media.decode import decoded_size
from .media.clips import DecodedClip
from .media.decoded import DecodedSource
from .media.hashing import content_hash
from .media.sources import Resolved
from .media.video import VideoClip, decode_clip, read_header
from .media.video_frames import select_frames
from .prompt import Tokenize, default_ids, prompt_ids, split_placeholder
from .request import MmInput, Output


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
        resolved = hooks.resolved_spec() or dict(spec)
        return cls(
            spec=resolved,
            spec_json=json.dumps(resolved, sort_keys=True),
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
    n = len(inp.images) + len(inp.videos)
    if n == 0:
        raise InvalidInputError("multimodal request without image or video sources")
    if n > plan.limits.max_items:
        raise LimitExceededError(f"multimodal request exceeds {plan.limits.max_items} media items (got {n})")
    if inp.videos:
        refuse_video(plan, item=len(inp.images))
    # A default prompt the family cannot build fails before any I/O.
    default_ids(inp, plan.hooks.family, plan.capabilities)


def refuse_video(plan: Plan, why: str = "", item: int | None = None) -> None:
    """``UnsupportedError`` naming the family unless it takes video."""
    if not plan.capabilities.video:
        raise UnsupportedError(f"family {plan.hooks.family!r} does not take video{why}", item=item)


def check_size_request(plan: Plan, frames: int | None, fps: float | None) -> None:
    """A pixel-free question about a clip (``frames``, ``fps``) needs a family that takes
    video and the clip's frame count."""
    if frames is not None or fps is not None:
        refuse_video(plan, ": frames and fps describe a clip")
    if frames is None and fps is not None:
        raise InvalidInputError(f"fps={fps!r} without frames: a clip's token count needs its source frame count")


def _hash(src: Resolved) -> int:
    return content_hash(src) if isinstance(src, (bytes, bytearray, memoryview)) else src.hash


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
    frames: int | None = None
    decode_ms: float = 0.0
    process_ms: float = 0.0
    cached: bool = False


def _clip(plan: Plan, src: bytes | DecodedClip, index: int) -> VideoClip:
    """A video item's chosen frames, decoded (only those) or selected from given frames."""
    limits = plan.limits
    if isinstance(src, DecodedClip):
        chosen = plan.hooks.sample_frames(src.clip.num_frames, src.clip.fps, index)
        return src.clip if chosen is None else select_frames(src.clip, chosen)
    choose = lambda header: plan.hooks.sample_frames(header.total_frames, header.fps, index)  # noqa: E731
    return decode_clip(src, choose, max_frames=limits.max_video_frames, max_pixels=limits.max_video_pixels)


def _image(plan: Plan, src: Resolved, index: int) -> DecodedImage:
    """One image item decoded, the size the family would process it at checked first."""
    if isinstance(src, DecodedSource):
        try:
            media = src.to_rgb(plan.decode_options)
        except MmError as e:
            raise e.at_item(index) from None
    else:
        media = plan.hooks.decode(src, plan.decode_options, index)
    check_processed(plan, media.width, media.height, index=index)
    return media


def _make(plan: Plan, src: Resolved, index: int, video: bool) -> _Made:
    t0 = time.perf_counter()
    if video:
        try:
            media = _clip(plan, src, index)
        except MmError as e:
            raise e.at_item(index) from None
        check_processed(plan, media.width, media.height, media.total_frames, media.fps, media.num_frames, index)
    else:
        media = _image(plan, src, index)
    t1 = time.perf_counter()
    item = plan.hooks.process_item(media, index)
    frames = media.num_frames if isinstance(media, VideoClip) else None
    return _Made(item, (media.width, media.height), frames, (t1 - t0) * 1000.0, _ms(t1))


def check_processed(
    plan: Plan, width: int, height: int, frames: int | None = None, fps: float | None = None,
    kept_frames: int = 1, index: int | None = None,
) -> None:
    """Refuse, before any allocation, an item the family would process at a size past the
    limits (its ``mm_plan_item`` says the size; families without it are not checked).
    ``frames``/``fps`` describe a clip (``kept_frames`` of it are processed)."""
    if not plan.hooks.implements("mm_plan_item"):
        return
    w, h = plan.hooks.plan_item(width, height, frames, fps, item=index).size
    n = w * h * kept_frames
    video = frames is not None
    limit = plan.limits.max_video_pixels if video else plan.limits.max_processed_pixels
    if n > limit:
        what = f"{kept_frames} frames of {w}x{h}" if video else f"{w}x{h}"
        name = "max_video_pixels" if video else "max_processed_pixels"
        err = LimitExceededError(
            f"the family would process a {width}x{height} item at {what} = {n} pixels, above Limits.{name} = {limit}"
        )
        raise err if index is None else err.at_item(index)


def _made(plan: Plan, src: Resolved, digest: int, index: int, video: bool) -> _Made:
    if plan.cache is None:
        return _make(plan, src, index, video)
    key = (*plan.cache_scope, video, digest)
    entry, hit = plan.cache.get_or_compute(key, lambda: _make(plan, src, index, video))
    return attrs.evolve(entry, decode_ms=0.0, process_ms=0.0, cached=True) if hit else entry


def run(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> Output:
    """Every step after I/O, in order; ``resolved`` are the request's sources, fetched."""
    t_start = time.perf_counter()
    modalities = [m for m, _ in inp.sources]
    hashes, hash_ms = _hashes(resolved)
    keys = [(m == "video", h) for m, h in zip(modalities, hashes)]
    first = {k: i for i, k in reversed(list(enumerate(keys)))}  # (video?, digest) -> its first index
    distinct = sorted(first.values())

    def make(_: int, i: int) -> _Made:
        return _made(plan, resolved[i], hashes[i], i, modalities[i] == "video")

    made = dict(zip(distinct, par.try_map(make, distinct)))
    per_item = [made[first[k]] for k in keys]
    items = [
        OutputItem(m.item.feature, m.item.aux, h, mod, m.item.geometry, m.size, m.item.size, m.frames)
        for m, h, mod in zip(per_item, hashes, modalities)
    ]
    item_times = [
        ItemTimings(f, hm, *((m.decode_ms, m.process_ms, m.cached) if first[k] == i else (0.0, 0.0, True)))
        for i, (m, k, f, hm) in enumerate(zip(per_item, keys, fetch_ms, hash_ms))
    ]
    return _finish(plan, inp, tokenize, items, item_times, t_start, sum(fetch_ms))


def _finish(
    plan: Plan, inp: MmInput, tokenize: Tokenize | None, items: list[OutputItem], item_times: list[ItemTimings],
    t_start: float, fetch_ms: float,
) -> Output:
    """The prompt steps, then the output with its items in prompt order."""
    ids = prompt_ids(inp, tokenize, plan.hooks.family, plan.capabilities)
    geometries = [it.geometry for it in items]
    modalities = [it.modality for it in items]
    t0 = time.perf_counter()
    try:
        expanded = apply_layout(ids, plan.hooks.layout(ids, geometries, modalities), len(items))
    except LayoutError as e:
        why = split_placeholder(inp, ids, plan.capabilities, modalities)
        if why is None:
            raise
        raise why from e
    t1 = time.perf_counter()
    positions = plan.hooks.positions(len(expanded.input_ids), expanded.offsets, geometries, modalities)
    t2 = time.perf_counter()
    order = sorted(range(len(items)), key=lambda i: expanded.offsets[i][0])
    timings = _timings([item_times[i] for i in order], (t1 - t0) * 1000.0, (t2 - t1) * 1000.0, fetch_ms + _ms(t_start))
    return Output(
        expanded.input_ids, [items[i] for i in order], [expanded.offsets[i] for i in order], positions,
        plan.spec_json, timings,
    )


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
    modalities = [m for m, _ in inp.sources]
    hashes, hash_ms = _hashes(resolved)

    def one(i: int, src: Resolved) -> tuple[tuple[int, int], Any]:
        frames = fps = None
        try:
            if isinstance(src, DecodedClip):
                size, frames, fps = (src.clip.width, src.clip.height), src.clip.num_frames, src.clip.fps
            elif modalities[i] == "video":
                header = read_header(src)
                size, frames, fps = (header.width, header.height), header.total_frames, header.fps
            elif isinstance(src, DecodedSource):
                size = src.size(plan.decode_options)
            else:
                size = decoded_size(src, plan.decode_options)
        except MmError as e:
            raise e.at_item(i) from None
        return size, plan.hooks.plan_item(*size, frames, fps, item=i)

    planned = par.try_map(one, resolved)
    items = [
        OutputItem(None, {}, h, mod, p.geometry, size, p.size) for (size, p), h, mod in zip(planned, hashes, modalities)
    ]
    item_times = [ItemTimings(f, hm, 0.0, 0.0, False) for f, hm in zip(fetch_ms, hash_ms)]
    return _finish(plan, inp, tokenize, items, item_times, t_start, sum(fetch_ms))


def store(
    plan: Plan, inp: MmInput, resolved: Sequence[Resolved], tokenize: Tokenize | None, fetch_ms: Sequence[float]
) -> tuple[Output, list[np.ndarray]]:
    """:func:`count`, plus each item's ``mm_stored_pixels`` in the output's item order: the
    uint8 arrays a dataset keeps instead of features (``mm_features_from_pixels`` rebuilds
    them). Images only."""
    if inp.videos:
        raise UnsupportedError("stored pixels are for image items; this request has video items")
    out = count(plan, inp, resolved, tokenize, fetch_ms)
    pixels = par.try_map(lambda i, src: plan.hooks.stored_pixels(_image(plan, src, i), i), resolved)
    # Items come back in prompt order; equal hashes are equal bytes, hence equal pixels.
    by_hash = {_hash(src): p for src, p in zip(resolved, pixels)}
    return out, [by_hash[it.hash] for it in out.items]
