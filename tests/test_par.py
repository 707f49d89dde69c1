"""The fan-out seam: configuration, order, lowest-index errors, nesting."""

from __future__ import annotations

import threading

import pytest

from mm_framework import par


@pytest.mark.parametrize("raw, want", [("inline", "inline"), ("INLINE", "inline"), ("3", 3), ("0", None), ("", None)])
def test_env_parsing(monkeypatch, threads, raw, want):
    monkeypatch.setenv("MM_FRAMEWORK_THREADS", raw)
    threads(None)
    import os

    assert par.threads() == (want if want is not None else min(8, os.cpu_count() or 8))


@pytest.mark.parametrize("raw", ["bogus", "-1", "2.5", "four"])
def test_bad_thread_setting_in_the_environment_names_the_variable(monkeypatch, threads, raw):
    monkeypatch.setenv("MM_FRAMEWORK_THREADS", raw)
    threads(None)
    from mm_framework.errors import SpecError

    with pytest.raises(SpecError, match=f"MM_FRAMEWORK_THREADS must be 'inline', a number of threads.*got '{raw}'"):
        par.threads()


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
    caller = threading.current_thread().name
    names = []
    started = threading.Event()

    def chunk(a, b):
        names.append(threading.current_thread().name)
        if a == 0:  # hold the first window until another thread has taken one
            started.wait(5)
        else:
            started.set()

    par.try_map(lambda i, x: par.for_chunks(chunk, 4, 1), [0])
    assert len(names) == 4 and any(n.startswith(par.THREAD_PREFIX) for n in names)
    assert all(n.startswith(par.THREAD_PREFIX) or n == caller for n in names)


def test_fan_out_finishes_when_every_pool_thread_is_blocked(threads):
    """The caller works through its own windows, so blocked pool threads cannot stall it."""
    threads(2)
    release = threading.Event()
    blockers = [par._get_pool().submit(release.wait, 10) for _ in range(2)]
    try:
        out = par.try_map(lambda i, x: x + 1, list(range(20)))
        assert out == list(range(1, 21))
        par.for_chunks(lambda a, b: None, 10, 1)
    finally:
        release.set()
        for f in blockers:
            f.result()


def test_items_above_a_failure_are_skipped_but_lower_ones_run(threads):
    threads(2)
    ran = []

    def f(i, x):
        ran.append(i)
        if i in (5, 2):
            raise ValueError(i)

    with pytest.raises(ValueError, match="^2$"):
        par.try_map(f, list(range(50)))
    assert {0, 1, 2}.issubset(ran) and len(ran) < 50


def test_bad_thread_setting():
    with pytest.raises(ValueError):
        par.set_threads(0)


def test_threads_for_a_cpu_budget_count_the_caller():
    assert [par.threads_for_cpus(c) for c in (0, 0.5, 1, 1.5, 2, 8)] == ["inline", "inline", "inline", "inline", 1, 7]
