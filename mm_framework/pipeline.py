"""``pipeline_from_spec`` and the immutable, thread-safe ``Pipeline``: settings and dispatch.

A pipeline holds a :class:`~.driver.Plan` (the spec bound to its family) and its fetch
policy. It only decides where each part of a request runs: the driver's request checks
and I/O on the caller (or, for :meth:`Pipeline.process_async`, on its event loop), and
the driver's CPU steps on the caller's thread (a worker thread for async callers), whose
items fan out on the ``par`` seam.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from . import driver, par
from .cache import FeatureCache
from .carriers import Capabilities, ClipHeader, DecodeOptions, ImageHeader, ItemPlan, OutputItem
from .checks import check_int
from .driver import AUDIO_RATE
from .errors import InvalidInputError, MmError, SpecError
from .family import parse_spec
from .limits import Limits
from .media.policy import FetchPolicy, source_label
from .media.sources import Resolved, resolve_sources, resolve_sources_async
from .prompt import Tokenize
from .request import MmInput, Output
from .settings import check_environment

# Requests process_many runs at once (bounds its memory and its threads).
MAX_IN_FLIGHT = 4


class Pipeline:
    """One family built from one spec. Immutable; share it across threads and loops.

    Pickles as its spec, limits and fetch policy, and rebuilds itself on load (through
    the installed plugins of the receiving process).
    """

    __slots__ = ("_plan", "_policy")

    def __init__(
        self,
        spec: str | bytes | Mapping[str, Any],
        *,
        limits: Limits | None = None,
        fetch_policy: FetchPolicy | None = None,
        cache: FeatureCache | None = None,
        hashes: bool = True,
    ) -> None:
        check_environment()
        if cache is not None and not isinstance(cache, FeatureCache):
            raise SpecError(f"cache must be a FeatureCache or None, got {type(cache).__name__}")
        if not isinstance(hashes, bool):
            raise SpecError(f"hashes must be True or False, got {type(hashes).__name__}")
        if not hashes and cache is not None:
            raise SpecError("a cache needs hashes: its keys are the items' content hashes")
        limits = limits if limits is not None else Limits()
        object.__setattr__(self, "_plan", driver.Plan.build(parse_spec(spec), limits, cache, hashes))
        object.__setattr__(self, "_policy", fetch_policy)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Pipeline is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._plan.spec, self._plan.limits, self._policy, self._plan.cache, self._plan.hashes))

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
    def cache(self) -> FeatureCache | None:
        return self._plan.cache

    @property
    def hashes(self) -> bool:
        """Whether items are content-hashed (``OutputItem.hash``). A pipeline built with
        ``hashes=False`` (for an engine that hashes media itself, as vLLM does) skips that
        pass over each item's bytes: its items' ``hash`` is ``None``, identical items of a
        request are processed once each, and it takes no cache."""
        return self._plan.hashes

    @property
    def capabilities(self) -> Capabilities:
        return self._plan.capabilities

    @property
    def decode_options(self) -> DecodeOptions:
        """How this pipeline decodes: the family's choices plus the pixel limit."""
        return self._plan.decode_options

    @property
    def stores_pixels(self) -> bool:
        """Whether :meth:`stored_pixels` works: the family stores uint8 pixels for datasets."""
        return self._plan.hooks.stores_pixels

    def _fetch(self, inp: MmInput) -> tuple[list[Resolved], list[float]]:
        driver.admit(self._plan, inp)
        times: list[float] = []
        sources, takers = [it.source for it in inp.items], driver.takers(self._plan, inp)
        resolved = resolve_sources(sources, limits=self._plan.limits, policy=self._policy, times=times, takers=takers)
        return resolved, times

    async def _fetch_async(self, inp: MmInput) -> tuple[list[Resolved], list[float]]:
        driver.admit(self._plan, inp)
        times: list[float] = []
        sources, takers = [it.source for it in inp.items], driver.takers(self._plan, inp)
        resolved = await resolve_sources_async(
            sources, limits=self._plan.limits, policy=self._policy, times=times, takers=takers
        )
        return resolved, times

    def process(self, inp: MmInput, *, tokenize: Tokenize | None = None) -> Output:
        """Run one request on the calling thread (items fan out on the shared pool)."""
        with _naming_sources(inp):
            resolved, times = self._fetch(inp)
            return driver.run(self._plan, inp, resolved, tokenize, times)

    async def process_async(self, inp: MmInput, *, tokenize: Tokenize | None = None) -> Output:
        """Same result as :meth:`process`; the event loop is never blocked."""
        with _naming_sources(inp):
            resolved, times = await self._fetch_async(inp)
            return await asyncio.to_thread(driver.run, self._plan, inp, resolved, tokenize, times)

    def process_items(self, inp: MmInput) -> list[OutputItem]:
        """:meth:`process`'s items, in input order, without its prompt steps (no ids, offsets
        or positions): for callers that need the features alone, such as ``mm_framework.hf``'s
        video adapter, and so for families whose prompt needs more than the request holds
        (GLM-4V's video timestamps are the tokenizer's ids)."""
        with _naming_sources(inp):
            resolved, times = self._fetch(inp)
            return driver.processed(self._plan, inp, resolved, times)[0]

    def count_tokens(self, inp: MmInput, *, tokenize: Tokenize | None = None) -> Output:
        """:meth:`process` without pixels: the same ids, offsets, positions, hashes, sizes
        and geometry, from image headers alone (items have ``feature=None``)."""
        with _naming_sources(inp):
            resolved, times = self._fetch(inp)
            return driver.count(self._plan, inp, resolved, tokenize, times)

    def decode(self, inp: MmInput, *, tokenize: Tokenize | None = None) -> tuple[Output, list[Any]]:
        """:meth:`count_tokens` plus each item decoded as the family will process it (a
        ``DecodedImage``, a ``VideoClip``, ...), in the output's item order: what a tool
        showing the family's view of a request needs, from one fetch."""
        with _naming_sources(inp):
            resolved, times = self._fetch(inp)
            return driver.decoded(self._plan, inp, resolved, tokenize, times)

    def stored_pixels(self, inp: MmInput, *, tokenize: Tokenize | None = None) -> tuple[Output, list[np.ndarray]]:
        """:meth:`count_tokens` plus each item's uint8 pixels as the family stores them
        (``mm_stored_pixels``; the family's ``mm_features_from_pixels`` rebuilds the exact features).
        ``UnsupportedError`` for families without those hooks."""
        with _naming_sources(inp):
            resolved, times = self._fetch(inp)
            return driver.store(self._plan, inp, resolved, tokenize, times)

    def process_many(
        self,
        inputs: Iterable[MmInput],
        *,
        tokenize: Tokenize | None = None,
        return_exceptions: bool = False,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> list[Output | MmError]:
        """Every request, results in input order, each its own accept or reject.

        Up to ``max_in_flight`` requests run at once on threads of their own, so the I/O
        of later requests overlaps the CPU work of earlier ones, and CPU work of several
        requests overlaps too (decode, resize and patchify release the GIL); memory
        stays bounded by that many requests. With ``return_exceptions`` a rejected
        request gives its ``MmError`` in its place; otherwise the first rejection in input
        order is raised and requests not yet started are abandoned. Inline mode
        (``MM_FRAMEWORK_THREADS=inline``) starts no thread: it is a plain loop.
        """
        inputs = list(inputs)
        ahead = check_int(max_in_flight, "max_in_flight", minimum=1)

        def one(inp: MmInput) -> Output | MmError:
            try:
                return self.process(inp, tokenize=tokenize)
            except MmError as e:
                if return_exceptions:
                    return e
                raise

        if par.threads() == "inline":
            return [one(inp) for inp in inputs]
        out: list[Output | MmError] = []
        with ThreadPoolExecutor(ahead, thread_name_prefix="mm-many") as runner:
            running: list[Future[Output | MmError]] = []
            try:
                for k in range(len(inputs)):
                    while len(running) < min(len(inputs), k + ahead):
                        running.append(runner.submit(one, inputs[len(running)]))
                    out.append(running[k].result())
            finally:
                for f in running:
                    f.cancel()
        return out

    async def process_many_async(
        self,
        inputs: Iterable[MmInput],
        *,
        tokenize: Tokenize | None = None,
        return_exceptions: bool = False,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> list[Output | MmError]:
        """:meth:`process_many` for coroutines: at most ``max_in_flight`` requests run at
        once; results in input order; the event loop is never blocked."""
        inputs = list(inputs)
        gate = asyncio.Semaphore(check_int(max_in_flight, "max_in_flight", minimum=1))

        async def one(inp: MmInput) -> Output | MmError:
            async with gate:
                try:
                    return await self.process_async(inp, tokenize=tokenize)
                except MmError as e:
                    if return_exceptions:
                        return e
                    raise

        tasks = [asyncio.ensure_future(one(inp)) for inp in inputs]
        try:
            return [await task for task in tasks]
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def num_media_tokens(
        self,
        width: int | None = None,
        height: int | None = None,
        *,
        frames: int | None = None,
        fps: float | None = None,
        seconds: float | None = None,
        sample_rate: int = AUDIO_RATE,
    ) -> int:
        """Tokens one ``width`` x ``height`` image expands to, without any pixels; with
        ``frames`` (the clip's source frame count) and ``fps``, one video's; with ``seconds``
        (and no size), one audio item's of that length at ``sample_rate`` Hz. A size or a
        length the pipeline would refuse to process is refused here too. A clip or an audio
        length for a family without that modality is an ``UnsupportedError``: its image count
        would be the wrong answer."""
        return driver.media_tokens(self._plan, *self._header(width, height, frames, fps, seconds, sample_rate))

    def plan_item(
        self,
        width: int | None = None,
        height: int | None = None,
        *,
        frames: int | None = None,
        fps: float | None = None,
        seconds: float | None = None,
        sample_rate: int = AUDIO_RATE,
    ) -> ItemPlan:
        """What the family makes of one item described as :meth:`num_media_tokens` takes it,
        without pixels or samples: its geometry and processed size."""
        modality, header = self._header(width, height, frames, fps, seconds, sample_rate)
        return driver.check_processed(self._plan, self._plan.modality(modality), header, None)

    def _header(
        self, width: int | None, height: int | None, frames: int | None, fps: float | None, seconds: float | None,
        sample_rate: int,
    ) -> tuple[str, Any]:
        if seconds is not None:
            return "audio", driver.audio_size_request(self._plan, width, height, frames, fps, seconds, sample_rate)
        if width is None or height is None:
            raise InvalidInputError("a token count needs an image's width and height, or seconds for audio")
        driver.check_size_request(self._plan, frames, fps)
        if frames is None:
            return "image", ImageHeader(width, height)
        return "video", ClipHeader(frames, fps, width, height)

    def model_kwargs(self, out: Output) -> dict[str, np.ndarray]:
        """The model runner's keyword tensors for ``out``'s items, as this family defines them."""
        return self._plan.hooks.model_kwargs(out.items)

    def hf_image_outputs(self, out: Output | Sequence[OutputItem]) -> dict[str, np.ndarray] | None:
        """What the transformers image processor the family clones returns for ``out``'s
        images (``out``: an output or its items, :meth:`process_items`), or ``None`` when the
        family does not say (hook ``mm_hf_image_outputs``)."""
        return self._plan.hooks.hf_image_outputs(out.items if isinstance(out, Output) else out)

    def hf_video_outputs(self, out: Output | Sequence[OutputItem]) -> dict[str, np.ndarray] | None:
        """What the transformers video processor the family clones returns for ``out``'s
        videos (``out``: an output or its items, :meth:`process_items`), or ``None`` when the
        family does not say (hook ``mm_hf_video_outputs``)."""
        return self._plan.hooks.hf_video_outputs(out.items if isinstance(out, Output) else out)


@contextlib.contextmanager
def _naming_sources(inp: MmInput) -> Iterator[None]:
    """An error about one item of ``inp`` names that item's source (``item 1 (cat.png): ...``)."""
    try:
        yield
    except MmError as e:
        pairs = inp.sources
        named = e.from_source(source_label(pairs[e.item][1])) if e.item is not None and e.item < len(pairs) else e
        if named is e:
            raise
        raise named from None


def _rebuild(
    spec: dict[str, Any], limits: Limits, policy: FetchPolicy | None, cache: FeatureCache | None, hashes: bool
) -> Pipeline:
    return Pipeline(spec, limits=limits, fetch_policy=policy, cache=cache, hashes=hashes)


def pipeline_from_spec(
    spec: str | bytes | Mapping[str, Any],
    *,
    limits: Limits | None = None,
    fetch_policy: FetchPolicy | None = None,
    cache: FeatureCache | None = None,
) -> Pipeline:
    """Build a pipeline from ``{"family": ..., **resolved params}`` (a dict or JSON text).

    ``cache``: a :class:`~.cache.FeatureCache` (shareable by several pipelines) that keeps
    processed items by content; none by default.
    """
    return Pipeline(spec, limits=limits, fetch_policy=fetch_policy, cache=cache)
