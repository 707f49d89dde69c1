"""The only fan-out seam: a process-wide thread pool, or inline on the caller.

Threads (not processes) are enough because the heavy kernels (Pillow decode and resize,
numpy gathers, blake3) release the GIL. Every fan-out is an order-preserving map or a
write into disjoint slices, never a reduction, so results are byte-identical inline,
with one thread or with many.

``MM_FRAMEWORK_THREADS``: unset or ``0`` -> ``min(8, cores)``; ``N`` -> N threads;
``inline`` -> no pool at all, everything runs on the caller (no threads are started);
anything else is a ``SettingError`` (a ``SpecError``) naming the variable. Read once, when
the pool is first needed (and checked by :func:`mm_framework.settings.check_environment`);
:func:`set_threads` changes it at run time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .errors import SettingError

T = TypeVar("T")
R = TypeVar("R")

THREAD_PREFIX = "mm-framework"
ENV = "MM_FRAMEWORK_THREADS"
FORMS = "'inline', a number of threads, or 0 or unset for min(8, cores)"
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_mode: int | str | None = None  # None: not read from the environment yet
_worker = threading.local()


def threads_from_env() -> int | str:
    """``MM_FRAMEWORK_THREADS`` as a mode: ``"inline"`` or the pool size."""
    raw = os.environ.get(ENV, "")
    value = raw.strip().lower()
    if value == "inline":
        return "inline"
    if not (value == "" or value.isascii() and value.isdigit()):
        raise SettingError.bad_value(ENV, raw, FORMS)
    n = int(value) if value else 0
    return n if n > 0 else min(8, os.cpu_count() or 8)


def set_threads(threads: int | str | None) -> None:
    """Replace the pool: ``"inline"``, a positive count, or ``None`` to re-read the env."""
    global _pool, _mode
    if threads is not None and threads != "inline" and (not isinstance(threads, int) or threads <= 0):
        raise ValueError(f"threads must be 'inline', a positive int or None, got {threads!r}")
    with _lock:
        old, _pool = _pool, None
        _mode = threads
    if old is not None:
        old.shutdown(wait=True)


def threads() -> int | str:
    """The configured mode: ``"inline"`` or the pool size."""
    global _mode
    with _lock:
        if _mode is None:
            _mode = threads_from_env()
        return _mode


def _mark_worker() -> None:
    _worker.active = True


def _get_pool() -> ThreadPoolExecutor | None:
    global _pool, _mode
    with _lock:
        if _mode is None:
            _mode = threads_from_env()
        if _mode == "inline":
            return None
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=int(_mode), thread_name_prefix=THREAD_PREFIX, initializer=_mark_worker
            )
        return _pool


def on_worker() -> bool:
    """True on a pool thread, where a nested fan-out must run inline (no deadlock)."""
    return getattr(_worker, "active", False)


class _Claims:
    """Indices ``0..n-1`` handed out one at a time to whoever asks: the caller and helpers.

    The caller works through the indices itself and only waits for ones a helper has
    already started, never for a helper still queued behind busy pool threads. So a
    fan-out finishes even when every pool thread is blocked (on a lock, another fan-out,
    a feature-cache wait), with the same results: each index runs exactly once and
    writes only its own output.
    """

    def __init__(self, n: int, run: Callable[[int], object]) -> None:
        self.n = n
        self.run = run
        self.results: list[object] = [None] * n
        self.errors: dict[int, BaseException] = {}
        self._next = 0
        self._stop = n  # no index at or above this one starts (set by the lowest error)
        self._running = 0
        self._cond = threading.Condition()

    def drain(self) -> None:
        while True:
            with self._cond:
                i = self._next
                if i >= self._stop:
                    return
                self._next += 1
                self._running += 1
            try:
                self.results[i] = self.run(i)
            except BaseException as e:
                with self._cond:
                    self.errors[i] = e
                    self._stop = min(self._stop, i)
            finally:
                with self._cond:
                    self._running -= 1
                    self._cond.notify_all()

    def wait(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._running == 0)


def _fan_out(run: Callable[[int], R], n: int) -> list[R]:
    pool = None if n <= 1 or on_worker() or pool_size() < 2 else _get_pool()
    if pool is None:
        return [run(i) for i in range(n)]
    claims = _Claims(n, run)
    # The caller is one of the pool_size() threads a fan-out may use.
    helpers = [pool.submit(claims.drain) for _ in range(min(n, pool_size()) - 1)]
    # While the caller works on its share it counts as a worker: its own nested fan-outs
    # run inline, as on the pool threads (the fan-out is already using every core).
    _worker.active = True
    try:
        claims.drain()
        claims.wait()
    finally:
        _worker.active = False
        for f in helpers:
            f.cancel()
    if claims.errors:
        raise claims.errors[min(claims.errors)]
    return claims.results  # type: ignore[return-value]


def try_map(fn: Callable[[int, T], R], items: Sequence[T]) -> list[R]:
    """``[fn(i, x) for i, x in enumerate(items)]``, fanned out, in input order.

    On failure the error of the lowest failing index is raised (deterministic whatever
    the scheduling); items above a failed one that have not started are skipped. A single
    item runs on the caller, so its own nested fan-outs (row bands of one large image)
    can use the pool.
    """
    return _fan_out(lambda i: fn(i, items[i]), len(items))


def for_chunks(fn: Callable[[int, int], None], total: int, chunk: int) -> None:
    """Run ``fn(start, stop)`` over ``[0, total)`` in ``chunk``-sized windows.

    ``fn`` must write only into its own window. Runs inline on a pool worker or when
    there is a single window.
    """
    bounds = [(s, min(s + chunk, total)) for s in range(0, total, max(1, chunk))]
    _fan_out(lambda i: fn(*bounds[i]), len(bounds))


def pool_size() -> int:
    """Number of threads a fan-out can use (1 when inline)."""
    mode = threads()
    return 1 if mode == "inline" else int(mode)


# Below ~0.25 MP a fan-out costs more than it saves.
_PAR_MIN_PIXELS = 1 << 18


def rows_per_worker(rows: int, pixels: int) -> int:
    """Window size for :func:`for_chunks` over ``rows`` of a ``pixels``-pixel image.

    One window per pool thread for large images; a single window (inline) for small ones.
    """
    if pixels < _PAR_MIN_PIXELS:
        return max(1, rows)
    return max(1, -(-rows // pool_size()))


def threads_for_cpus(cpus: float) -> int | str:
    """The :func:`set_threads` value that keeps a process within ``cpus`` cores: a fan-out
    runs on the caller too, so the pool gets one thread fewer; one core or less is inline."""
    whole = int(cpus)
    return "inline" if whole <= 1 else whole - 1
