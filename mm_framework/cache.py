"""``FeatureCache``: processed items kept by content, bounded by bytes, shared by pipelines.

A key is ``(the pipeline's resolved spec digest, its decode options, the item's content
hash)``: two pipelines with different specs never see each other's items, and the same
spec in two pipelines shares them. A value is the driver's record of one processed item
(the family's ``ProcessedItem``, read-only arrays, and the decoded size), so a hit gives
the very bytes a miss computed.

Thread-safe (one lock around the LRU), and safe to share with event loops: the driver's
CPU steps run on threads even for async callers, and nothing here awaits. Concurrent
misses on one key compute once: the first caller computes, the others wait for its
result (or its error, which they then compute themselves, so an error is never cached).
Waiting never deadlocks the fan-out: a computation's band fan-out is finished by its own
thread when every pool thread is busy waiting (:mod:`.par`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

import attrs

from .carriers import ProcessedItem
from .checks import check_int
from .errors import SpecError


@attrs.frozen
class CacheStats:
    hits: int
    misses: int
    evictions: int
    bytes: int
    entries: int
    max_bytes: int


class Entry(Protocol):
    item: ProcessedItem


E = TypeVar("E", bound=Entry)


def entry_bytes(entry: Entry) -> int:
    """What an entry costs the cache: the bytes of its item's arrays."""
    item = entry.item
    return item.feature.array.nbytes + sum(t.array.nbytes for t in item.aux.values())


class FeatureCache:
    """An LRU of processed items, never holding more than ``max_bytes`` of arrays.

    An item larger than ``max_bytes`` is computed and returned but not kept. Pickles as
    its size: a process that receives a pipeline gets an empty cache of its own.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = check_int(max_bytes, "FeatureCache max_bytes", minimum=1, error=SpecError)
        self._lock = threading.Lock()
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._pending: dict[Hashable, Future[Any]] = {}
        self._bytes = self._hits = self._misses = self._evictions = 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (FeatureCache, (self.max_bytes,))

    def __repr__(self) -> str:
        s = self.stats()
        return f"FeatureCache({s.bytes}/{s.max_bytes} bytes, {s.entries} entries, {s.hits} hits, {s.misses} misses)"

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses, self._evictions, self._bytes, len(self._items), self.max_bytes)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def get_or_compute(self, key: Hashable, compute: Callable[[], E]) -> tuple[E, bool]:
        """``(entry, hit)``: the cached entry, or ``compute()``'s (kept if it fits)."""
        while True:
            with self._lock:
                found = self._items.get(key)
                if found is not None:
                    self._items.move_to_end(key)
                    self._hits += 1
                    return found[0], True
                waiting = self._pending.get(key)
                if waiting is None:
                    mine: Future[Any] = Future()
                    self._pending[key] = mine
                    self._misses += 1
                    break
            try:
                # Another caller computes this key; its result is ours, its error is not.
                item = waiting.result()
            except BaseException:
                continue
            with self._lock:
                self._hits += 1
            return item, True
        try:
            item = compute()
        except BaseException as e:
            with self._lock:
                del self._pending[key]
            mine.set_exception(e)
            raise
        self._store(key, item)
        with self._lock:
            del self._pending[key]
        mine.set_result(item)
        return item, False

    def _store(self, key: Hashable, item: Entry) -> None:
        size = entry_bytes(item)
        if size > self.max_bytes:
            return
        with self._lock:
            self._items[key] = (item, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
                self._evictions += 1
