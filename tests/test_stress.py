"""Stress: one pipeline under 8 threads plus an event loop, mixed good and bad requests
(images; and images with videos for the qwen presets that take them).

Every good request must give exactly its serial output, every bad one exactly its serial
error; afterwards no thread, file descriptor or memory may be left behind.
"""

from __future__ import annotations

import asyncio
import base64
import gc
import importlib.util
import io
import os
import random
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import par
from mm_framework.testing import sample_image
from mm_framework.testing import assert_same_output


def families():
    out = [pytest.param({"family": "toy", "image_token_id": 1}, id="toy")]
    presets = mmf.list_presets()
    for name in ("qwen2_vl", "inkling"):
        if name in presets:
            out.append(pytest.param(presets[name], id=name))
    if "inkling" in {f["name"] for f in mmf.list_families()} and "inkling" not in presets:
        out.append(pytest.param({"family": "inkling", "image_token_id": -101}, id="inkling"))
    return out


def build_requests(spec, n=240, seed=7):
    rng = random.Random(seed)
    ph = int(spec.get("image_token_id", 1))
    good = [sample_image(w, h, fmt, s) for s, (w, h, fmt) in enumerate(
        [(32, 24, "PNG"), (64, 48, "JPEG"), (50, 90, "PNG"), (120, 80, "JPEG"), (17, 33, "PNG"), (640, 480, "JPEG")])]
    large = sample_image(1400, 1100, "JPEG", 99)  # above the pipeline's pixel limit below
    bad = [b"", b"garbage bytes", good[0][: len(good[0]) // 2], large]
    requests = []
    for k in range(n):
        n_img = rng.choice([1, 1, 2, 3])
        imgs = [rng.choice(good) for _ in range(n_img)]
        if rng.random() < 0.25:
            imgs[rng.randrange(n_img)] = rng.choice(bad)
        if rng.random() < 0.2:
            i = rng.randrange(n_img)
            if isinstance(imgs[i], bytes) and imgs[i]:
                imgs[i] = "data:image/png;base64," + base64.b64encode(imgs[i]).decode()
        ids = [3]
        for _ in range(n_img + (1 if rng.random() < 0.05 else 0)):
            ids += [ph, 4]
        requests.append((imgs, ids))
    return requests


def outcome(pipe, imgs, ids, videos=()):
    try:
        return ("ok", pipe.process(mmf.MmInput(images=imgs, videos=videos, input_ids=ids)))
    except mmf.MmError as e:
        return ("err", type(e).__name__, str(e))


async def outcome_async(pipe, imgs, ids, videos=()):
    try:
        return ("ok", await pipe.process_async(mmf.MmInput(images=imgs, videos=videos, input_ids=ids)))
    except mmf.MmError as e:
        return ("err", type(e).__name__, str(e))


def same(a, b, what):
    assert a[0] == b[0], f"{what}: {a[:3] if a[0] == 'err' else 'ok'} vs {b[:3] if b[0] == 'err' else 'ok'}"
    if a[0] == "ok":
        assert_same_output(a[1], b[1], what)
    else:
        assert a[1:] == b[1:], what


def fd_count():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("spec", families())
def test_mixed_load_matches_serial_and_leaks_nothing(toy, spec):
    check_load(mmf.pipeline_from_spec(spec, limits=mmf.Limits(max_image_pixels=1_000_000)), build_requests(spec))


def video_presets():
    presets = mmf.list_presets()
    return [pytest.param(presets[n], id=n) for n in ("qwen2_5_vl", "qwen3_vl") if n in presets]


def build_video_requests(spec, n=160, seed=11):
    """Images and videos in one prompt: decoded clips, an encoded clip when PyAV is there,
    and bad videos (undecodable bytes, a wrong dtype, too many frames, one frame)."""
    rng = random.Random(seed)
    frames = [np.random.default_rng(s).integers(0, 256, (t, h, w, 3), dtype=np.uint8)
              for s, (t, h, w) in enumerate([(4, 32, 48), (9, 60, 40), (6, 90, 120), (2, 28, 28)])]
    good = [*frames, mmf.VideoFrames(frames[1], fps=12.0)]
    if importlib.util.find_spec("av") is not None:
        good.append(encoded_clip(frames[2]))
    bad = [b"not a clip", frames[0].astype(np.float32), np.zeros((40, 8, 8, 3), np.uint8), frames[0][:1]]
    sizes = [(32, 24, "PNG"), (64, 48, "JPEG"), (50, 90, "PNG")]
    images = [sample_image(w, h, fmt, s) for s, (w, h, fmt) in enumerate(sizes)]
    requests = []
    for _ in range(n):
        kinds = rng.sample(["image", "video", "image", "video"], rng.choice([1, 2, 3]))
        if "video" not in kinds:
            kinds.append("video")
        imgs = [rng.choice(images) for k in kinds if k == "image"]
        vids = [rng.choice(good) for k in kinds if k == "video"]
        if rng.random() < 0.25:
            vids[rng.randrange(len(vids))] = rng.choice(bad)
        ids = [3]
        for k in kinds:
            ids += [spec["image_token_id"] if k == "image" else spec["video_token_id"], 4]
        requests.append((imgs, ids, vids))
    return requests


def encoded_clip(frames):
    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        s = out.add_stream("mpeg4", rate=10)
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for f in frames:
            out.mux(s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")))
        out.mux(s.encode())
    return buf.getvalue()


@pytest.mark.parametrize("spec", video_presets())
def test_mixed_image_video_load_matches_serial_and_leaks_nothing(spec):
    check_load(mmf.pipeline_from_spec(spec, limits=mmf.Limits(max_video_frames=32)), build_video_requests(spec))


def check_load(pipe, requests):
    """``requests`` from 8 threads and an event loop at once, on a pool of 2: each gives
    its serial outcome, and no thread, file descriptor or memory is left behind."""
    par.set_threads(2)
    try:
        _check_load(pipe, requests)
    finally:
        par.set_threads(None)


def _check_load(pipe, requests):
    serial = [outcome(pipe, *r) for r in requests]
    assert 0.5 < sum(s[0] == "ok" for s in serial) / len(serial) < 0.95
    gc.collect()
    threads_before, fds_before = threading.active_count(), fd_count()
    tracemalloc.start()
    mem_before = tracemalloc.get_traced_memory()[0]

    via_loop = set(range(0, len(requests), 3))
    results = {}

    def loop_side():
        async def main():
            sem = asyncio.Semaphore(8)

            async def one(k):
                async with sem:
                    results[k] = await outcome_async(pipe, *requests[k])

            await asyncio.gather(*(one(k) for k in sorted(via_loop)))

        asyncio.run(main())

    loop_thread = threading.Thread(target=loop_side)
    loop_thread.start()
    with ThreadPoolExecutor(8) as ex:
        futures = {k: ex.submit(outcome, pipe, *requests[k]) for k in range(len(requests)) if k not in via_loop}
        for k, f in futures.items():
            results[k] = f.result()
    loop_thread.join()

    for k, want in enumerate(serial):
        same(want, results[k], f"request {k}")
    # clear, not del: loop_side's closure shares the name, and del would leave it unbound
    results.clear()
    del futures, serial
    gc.collect()
    mem_after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert threading.active_count() == threads_before
    assert fd_count() == fds_before
    assert mem_after - mem_before < 8 << 20, f"{(mem_after - mem_before) / 2**20:.1f} MiB not released"
