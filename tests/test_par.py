"""The fan-out seam: configuration, order, lowest-index errors, nesting."""

from __future__ import annotations

import threading

import pytest

from mm_framework import par


@pytest.mark.parametrize("raw, want", [("inline", "inline"), ("INLINE", "inline"), ("3", 3), ("0", None), ("", None), ("x", None)])
def test_env_parsing(monkeypatch, threads, raw, want):
    monkeypatch.setenv("MM_FRAMEWORK_THREADS", raw)
    threads(None)
    import os

    assert par.threads() == (want if want is not None else min(8, os.cpu_count() or 8))


def test_try_map_keeps_order_and_reports_lowest_error(threads):
    threads(4)
    assert par.try_map(lambda i, x: x * 2, list(range(50))) == [x * 2 for x in range(50)]

    def f(i, x):
        if i in (7, 3, 30):
            raise ValueError(i)
        return x

    with pytest.raises(ValueError, match="^3$"):
        par.try_map(f, list(range(40)))


def test_nested_fan_out_runs_inline_on_workers(threads):
    threads(2)
    seen = []

    def inner(a, b):
        seen.append((a, b, par.on_worker()))

    par.try_map(lambda i, x: par.for_chunks(inner, 10, 4), [0, 1])
    assert sorted((a, b) for a, b, _ in seen) == [(0, 4), (0, 4), (4, 8), (4, 8), (8, 10), (8, 10)]
    assert all(w for _, _, w in seen)


def test_single_item_runs_on_caller_and_chunks_use_pool(threads):
    threads(2)
    names = []
    par.try_map(lambda i, x: par.for_chunks(lambda a, b: names.append(threading.current_thread().name), 4, 1), [0])
    assert len(names) == 4 and all(n.startswith(par.THREAD_PREFIX) for n in names)


def test_bad_thread_setting():
    with pytest.raises(ValueError):
        par.set_threads(0)
