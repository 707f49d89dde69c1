"""FeatureCache: hits, misses, evictions, the byte bound, single-flight misses, sharing
between pipelines, in-request dedupe, and byte-identity with an uncached pipeline."""

from __future__ import annotations

import pickle
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import par
from mm_framework.testing import assert_same_output

from .conftest import png_bytes
from .toy_family import ToyFamily

CALLS: Counter[tuple[int, int, int]] = Counter()
_calls_lock = threading.Lock()


class CountingFamily(ToyFamily):
    """The toy family, counting how often each (block, width, height) was processed."""

    @mmp.hookimpl
    def mm_process_item(self, media):
        with _calls_lock:
            CALLS[(self.block, media.width, media.height)] += 1
        time.sleep(0.005)  # long enough for concurrent misses to overlap
        return super().mm_process_item(media)


class CountingPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("counting", CountingFamily)


@pytest.fixture
def counting():
    name = mmf.plugins.register(CountingPlugin(), name="counting-plugin")
    CALLS.clear()
    try:
        yield
    finally:
        mmf.plugins.unregister(name)


SPEC = {"family": "counting", "image_token_id": 1}
IMAGES = [png_bytes(32 + 8 * k, 24, seed=k) for k in range(4)]
# What each image costs the cache: the toy feature f32 [6 * (8 + 2k), 3] plus its grid i64 [3].
ITEM_BYTES = [6 * (8 + 2 * k) * 3 * 4 + 3 * 8 for k in range(4)]


def run(pipe, images):
    return pipe.process(mmf.MmInput(images=images, input_ids=[5] + [1] * len(images) + [6]))


def test_hit_is_byte_identical_and_skips_decode_and_processing(counting):
    cache = mmf.FeatureCache(1 << 20)
    pipe = mmf.pipeline_from_spec(SPEC, cache=cache)
    first = run(pipe, IMAGES[:2])
    again = run(pipe, IMAGES[:2])
    assert_same_output(first, again, "cached vs computed")
    assert_same_output(first, run(mmf.pipeline_from_spec(SPEC), IMAGES[:2]), "cached vs uncached pipeline")
    assert sum(CALLS.values()) == 2 + 2  # the uncached pipeline computed its own
    s = cache.stats()
    assert (s.hits, s.misses, s.entries, s.evictions) == (2, 2, 2, 0) and s.bytes == ITEM_BYTES[0] + ITEM_BYTES[1]
    assert [t.cached for t in again.timings.items] == [True, True]
    assert all(t.decode_ms == 0 and t.process_ms == 0 for t in again.timings.items)
    assert not any(t.cached for t in first.timings.items)


def test_lru_eviction_never_exceeds_the_bound(counting):
    cache = mmf.FeatureCache(ITEM_BYTES[0] + ITEM_BYTES[1] + 10)
    pipe = mmf.pipeline_from_spec(SPEC, cache=cache)
    run(pipe, IMAGES[:1])
    run(pipe, IMAGES[1:2])
    run(pipe, IMAGES[:1])  # touch 0: 1 is now the least recent
    run(pipe, IMAGES[2:3])  # evicts 1 (and 0 too if needed for the bound)
    s = cache.stats()
    assert s.bytes <= s.max_bytes and s.evictions >= 1
    CALLS.clear()
    run(pipe, IMAGES[2:3])
    assert sum(CALLS.values()) == 0  # the newest stayed
    run(pipe, IMAGES[1:2])
    assert sum(CALLS.values()) == 1  # the least recent went


def test_item_larger_than_the_cache_is_computed_not_kept(counting):
    cache = mmf.FeatureCache(ITEM_BYTES[0] - 1)
    pipe = mmf.pipeline_from_spec(SPEC, cache=cache)
    run(pipe, IMAGES[:1])
    run(pipe, IMAGES[:1])
    assert sum(CALLS.values()) == 2 and cache.stats().entries == 0 and cache.stats().bytes == 0


def test_two_specs_sharing_a_cache_never_mix(counting):
    cache = mmf.FeatureCache(1 << 20)
    a = mmf.pipeline_from_spec(SPEC, cache=cache)
    b = mmf.pipeline_from_spec({**SPEC, "block": 8}, cache=cache)
    a_out, b_out = run(a, IMAGES[:1]), run(b, IMAGES[:1])
    assert a_out.items[0].feature != b_out.items[0].feature
    assert_same_output(b_out, run(mmf.pipeline_from_spec({**SPEC, "block": 8}), IMAGES[:1]), "b vs uncached")
    # The same spec in another pipeline shares entries.
    run(mmf.pipeline_from_spec(SPEC, cache=cache), IMAGES[:1])
    assert cache.stats().hits == 1 and cache.stats().entries == 2


def test_same_item_twice_in_one_request_is_processed_once_without_a_cache(counting):
    pipe = mmf.pipeline_from_spec(SPEC)
    out = run(pipe, [IMAGES[0]] * 6)
    assert sum(CALLS.values()) == 1
    assert len({it.hash for it in out.items}) == 1 and len(out.offsets) == 6
    assert [t.cached for t in out.timings.items] == [False] + [True] * 5
    # A data: URL of the same bytes is the same item (hashes are of the raw bytes).
    import base64

    url = "data:image/png;base64," + base64.b64encode(IMAGES[0]).decode()
    CALLS.clear()
    run(pipe, [IMAGES[0], url])
    assert sum(CALLS.values()) == 1


@pytest.mark.parametrize("threads", [2, 8])
def test_eight_threads_hammering_compute_each_key_once(counting, threads):
    par.set_threads(threads)
    try:
        cache = mmf.FeatureCache(ITEM_BYTES[0] + ITEM_BYTES[1] + ITEM_BYTES[2] + ITEM_BYTES[3])
        pipe = mmf.pipeline_from_spec(SPEC, cache=cache)
        plain = mmf.pipeline_from_spec(SPEC)
        requests = [[IMAGES[k % 4]] if k % 3 else [IMAGES[k % 4], IMAGES[(k + 1) % 4]] for k in range(64)]
        want = [run(plain, r) for r in requests]
        CALLS.clear()
        with ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda r: run(pipe, r), requests))
        for k, (w, g) in enumerate(zip(want, got)):
            assert_same_output(w, g, f"request {k}")
        s = cache.stats()
        assert s.bytes <= s.max_bytes
        assert CALLS == Counter({(4, 32 + 8 * k, 24): 1 for k in range(4)})
    finally:
        par.set_threads(None)


def test_errors_are_not_cached(counting):
    cache = mmf.FeatureCache(1 << 20)
    pipe = mmf.pipeline_from_spec(SPEC, cache=cache)
    for _ in range(2):
        with pytest.raises(mmf.MediaError, match="item 0: image decode"):
            run(pipe, [b"not an image"])
    assert cache.stats().entries == 0


def test_cache_validation_and_pickling(counting):
    with pytest.raises(mmf.SpecError, match="FeatureCache max_bytes must be greater than zero"):
        mmf.FeatureCache(0)
    with pytest.raises(mmf.SpecError, match="cache must be a FeatureCache"):
        mmf.pipeline_from_spec(SPEC, cache={})
    cache = mmf.FeatureCache(1000)
    pipe = pickle.loads(pickle.dumps(mmf.pipeline_from_spec(SPEC, cache=cache)))
    assert pipe.cache.max_bytes == 1000 and pipe.cache is not cache and pipe.cache.stats().entries == 0


def test_asyncio_callers_share_the_cache(counting):
    import asyncio

    cache = mmf.FeatureCache(1 << 20)
    pipe = mmf.pipeline_from_spec(SPEC, cache=cache)

    async def main():
        requests = [mmf.MmInput(images=[IMAGES[0]], input_ids=[1]) for _ in range(8)]
        return await asyncio.gather(*(pipe.process_async(r) for r in requests))

    outs = asyncio.run(main())
    assert all(np.array_equal(o.items[0].feature.array, outs[0].items[0].feature.array) for o in outs)
    assert CALLS[(4, 32, 24)] == 1 and cache.stats().entries == 1


def test_unhashed_pipeline_gives_the_same_features_and_no_hashes(counting):
    # hashes=False (the transformers adapters'): the same ids, offsets and features, every
    # item processed (nothing to deduplicate by), and each item's hash None.
    pixels = np.random.default_rng(3).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    images = [IMAGES[0], pixels, IMAGES[0], pixels]
    hashed = run(mmf.pipeline_from_spec(SPEC), images)
    assert sum(CALLS.values()) == 2
    unhashed_pipe = mmf.Pipeline(SPEC, hashes=False)
    assert unhashed_pipe.hashes is False and mmf.pipeline_from_spec(SPEC).hashes is True
    unhashed = run(unhashed_pipe, images)
    assert sum(CALLS.values()) == 2 + 4
    assert [it.hash for it in unhashed.items] == [None] * 4 and "hash=none" in repr(unhashed.items[0])
    assert all(h is not None for h in (it.hash for it in hashed.items))
    assert unhashed.timings.hash_ms == 0 and not any(t.cached for t in unhashed.timings.items)
    assert np.array_equal(unhashed.input_ids, hashed.input_ids) and unhashed.offsets == hashed.offsets
    for a, b in zip(unhashed.items, hashed.items):
        assert a.feature == b.feature and a.aux == b.aux and a.geometry == b.geometry
    counted = unhashed_pipe.count_tokens(mmf.MmInput(images=images, input_ids=[5, 1, 1, 1, 1, 6]))
    assert [it.hash for it in counted.items] == [None] * 4
    again = pickle.loads(pickle.dumps(unhashed_pipe))
    assert again.hashes is False and run(again, images[:1]).items[0].hash is None


def test_unhashed_pipeline_refuses_a_cache_and_a_non_bool():
    with pytest.raises(mmf.SpecError, match="a cache needs hashes"):
        mmf.Pipeline(SPEC, hashes=False, cache=mmf.FeatureCache(1 << 20))
    with pytest.raises(mmf.SpecError, match="hashes must be True or False, got int"):
        mmf.Pipeline(SPEC, hashes=0)


def test_unhashed_pipeline_never_hashes_decoded_items(monkeypatch):
    # Decoded images and clips hash lazily: a hashes=False pipeline never computes one.
    from mm_framework.media import clips, decoded

    def no(*_):
        raise AssertionError("hashed")

    monkeypatch.setattr(decoded, "keyed_digest", no)
    monkeypatch.setattr(clips, "keyed_digest", no)
    pixels = np.random.default_rng(4).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    pipe = mmf.Pipeline({**mmf.preset("qwen2_vl"), "max_pixels": 56 * 56}, hashes=False)
    out = pipe.process(mmf.MmInput(images=[pixels], videos=[np.stack([pixels] * 2)]))
    assert [it.hash for it in out.items] == [None, None]
    with pytest.raises(AssertionError, match="hashed"):
        mmf.Pipeline({**mmf.preset("qwen2_vl"), "max_pixels": 56 * 56}).process(mmf.MmInput(images=[pixels]))
