"""Comparing what ``mm_framework.hf.accelerate`` returns with the transformers processor's own
``BatchFeature``, for a family's adapter tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def assert_same_batch(want: Mapping[str, Any], got: Mapping[str, Any], keys: Sequence[str] | None = None) -> None:
    """The same keys in the same order (``keys`` when given), and per key the same type (numpy
    array or torch tensor), dtype, shape and bytes."""
    assert list(got.keys()) == list(want.keys()), (list(want.keys()), list(got.keys()))
    if keys is not None:
        assert list(want.keys()) == list(keys), (list(keys), list(want.keys()))
    for k in want:
        a, b = want[k], got[k]
        assert type(a) is type(b), (k, type(a), type(b))
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), (k, a.dtype, b.dtype, a.shape, b.shape)
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), k


def noise_clip(t: int, h: int, w: int) -> np.ndarray:
    """A deterministic uint8 ``[t, h, w, 3]`` clip of noise (seeded by its shape)."""
    return np.random.default_rng(t * 1000 + h * 7 + w).integers(0, 256, (t, h, w, 3), dtype=np.uint8)


def clip_metadata(t: int, fps: float | None) -> list[dict] | None:
    """transformers' ``video_metadata`` of one clip of ``t`` frames at ``fps`` (``None``: none)."""
    return None if fps is None else [{"total_num_frames": t, "fps": fps, "frames_indices": list(range(t))}]


def assert_same_video_batch(want: Mapping[str, Any], got: Mapping[str, Any]) -> None:
    """:func:`assert_same_batch`, with ``video_metadata`` (transformers' ``VideoMetadata``
    objects) compared field by field: values and types (a sampler's ``frames_indices`` may be a
    tensor, an array, or a list without sampling)."""
    assert list(got.keys()) == list(want.keys()), (list(want.keys()), list(got.keys()))
    want, got = dict(want), dict(got)
    metas = want.pop("video_metadata", None), got.pop("video_metadata", None)
    assert_same_batch(want, got)
    if metas[0] is None:
        return
    assert len(metas[0]) == len(metas[1])
    for a, b in zip(*metas):
        for field in a:
            x, y = a[field], b[field]
            assert type(x) is type(y), (field, type(x), type(y))
            assert (x.tolist() == y.tolist() and x.dtype == y.dtype) if hasattr(x, "tolist") else x == y, field


def assert_video_calls_served(
    ref: Any, acc: Any, jobs: Sequence[tuple[Mapping[str, Any], tuple[int, int, int, float | None]]]
) -> None:
    """Each job (call kwargs, clip ``(frames, height, width, fps or None)``) through the video
    processor ``ref`` and its accelerated twin ``acc``: the same ``BatchFeature``, or the same
    ``ValueError`` (sampling without the metadata it needs); ``mm_framework.hf.stats()`` (reset
    before) counts every returned call served and every refused one as a fallback, and more
    are served than refused."""
    from mm_framework import hf

    served = refused = 0
    for call, (t, h, w, fps) in jobs:
        video = noise_clip(t, h, w)
        try:
            want = ref(videos=[video], video_metadata=clip_metadata(t, fps), **call)
        except ValueError as e:
            try:
                acc(videos=[video], video_metadata=clip_metadata(t, fps), **call)
            except ValueError as got:
                assert str(got) == str(e)
            else:
                raise AssertionError(f"{call}: the reference refused ({e}), the accelerated call did not")
            refused += 1
            continue
        assert_same_video_batch(want, acc(videos=[video], video_metadata=clip_metadata(t, fps), **call))
        served += 1
    stats = hf.stats()
    assert stats["served"] == {type(ref).__name__: served} and served > refused, stats
    assert sum(stats["fallbacks"].values()) == refused
    assert all("sample_frames refused (ValueError)" in k for k in stats["fallbacks"]), stats
