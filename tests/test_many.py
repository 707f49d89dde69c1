"""process_many and its async twin: order, error isolation, bounded prefetch, timings."""

from __future__ import annotations

import asyncio
import threading

import pytest

import mm_framework as mmf
from mm_framework.testing import assert_same_output

from .conftest import png_bytes

GOOD = [png_bytes(8 + 4 * k, 12, seed=k) for k in range(6)]


def requests(bad_at=()):
    return [mmf.MmInput(images=[b"broken" if k in bad_at else GOOD[k]], input_ids=[3, 1, 4]) for k in range(6)]


@pytest.mark.parametrize("mode", ["inline", 2])
def test_results_in_order_equal_to_a_loop(toy_pipe, threads, mode):
    threads(mode)
    want = [toy_pipe.process(r) for r in requests()]
    got = toy_pipe.process_many(requests(), max_in_flight=3)
    for k, (w, g) in enumerate(zip(want, got, strict=True)):
        assert_same_output(w, g, f"request {k}")
    got_async = asyncio.run(toy_pipe.process_many_async(requests(), max_in_flight=2))
    for k, (w, g) in enumerate(zip(want, got_async, strict=True)):
        assert_same_output(w, g, f"async request {k}")


def test_errors_stay_with_their_request(toy_pipe):
    got = toy_pipe.process_many(requests(bad_at=(1, 4)), return_exceptions=True)
    assert [type(g).__name__ for g in got] == ["Output", "MediaError", "Output", "Output", "MediaError", "Output"]
    assert str(got[1]).startswith("item 0: image decode")
    got_async = asyncio.run(toy_pipe.process_many_async(requests(bad_at=(1, 4)), return_exceptions=True))
    assert [type(g).__name__ for g in got_async] == [type(g).__name__ for g in got]


def test_without_return_exceptions_the_first_rejection_in_order_is_raised(toy_pipe):
    with pytest.raises(mmf.MediaError, match="item 0: image decode"):
        toy_pipe.process_many(requests(bad_at=(2, 5)))
    with pytest.raises(mmf.MediaError):
        asyncio.run(toy_pipe.process_many_async(requests(bad_at=(2, 5))))


def test_request_threads_are_bounded_and_gone_afterwards(toy_pipe, threads):
    threads(2)
    before = threading.active_count()
    toy_pipe.process_many(requests(), max_in_flight=2)
    assert threading.active_count() <= before + 2  # the par pool may have started once
    assert not [t for t in threading.enumerate() if t.name.startswith("mm-many")]


def test_inline_mode_starts_no_thread(toy_pipe, threads):
    threads("inline")
    before = threading.active_count()
    toy_pipe.process_many(requests())
    assert threading.active_count() == before


def test_max_in_flight_is_checked(toy_pipe):
    with pytest.raises(mmf.SpecError, match="max_in_flight must be greater than zero"):
        toy_pipe.process_many(requests(), max_in_flight=0)


def test_timings_are_present_and_add_up(toy_pipe):
    out = toy_pipe.process(mmf.MmInput(images=[GOOD[0], GOOD[1], GOOD[0]], input_ids=[1, 1, 1]))
    t = out.timings
    assert len(t.items) == 3 and [i.cached for i in t.items] == [False, False, True]
    for stage in ("fetch_ms", "hash_ms", "decode_ms", "process_ms"):
        assert getattr(t, stage) == pytest.approx(sum(getattr(i, stage) for i in t.items))
        assert getattr(t, stage) >= 0
    assert t.decode_ms > 0 and t.process_ms > 0 and t.layout_ms >= 0 and t.positions_ms >= 0
    # Wall time covers the stages that run one after another on the caller.
    assert t.total_ms >= t.fetch_ms + t.layout_ms + t.positions_ms
    # Timings are not part of the value: equal outputs compare equal whatever the clock said.
    assert out == toy_pipe.process(mmf.MmInput(images=[GOOD[0], GOOD[1], GOOD[0]], input_ids=[1, 1, 1]))
