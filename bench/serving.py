"""Serving benchmark: the feature cache and process_many, against plain process calls.

Usage (a venv with the repository installed: ``pip install . ./qwen_vl_plugin``)::

    python bench/serving.py             # both measurements, about a minute on 2 cores

1. **Cache.** One 1280x960 JPEG request (``qwen2_vl``), repeated: a pipeline with a
   ``FeatureCache`` (after one warm-up miss) against one without, interleaved over
   passes; the ratio of the medians is reported.
2. **process_many.** 32 single-image requests whose sources are URLs on a local HTTP
   server that answers each GET after a fixed latency (20 ms): ``process_many`` against
   a loop of ``process`` over the same requests, interleaved; outputs are compared byte
   for byte first.
"""

from __future__ import annotations

import argparse
import http.server
import socketserver
import statistics
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mm_framework as mmf  # noqa: E402
from mm_framework.testing import assert_same_output  # noqa: E402

from inputs import inputs  # noqa: E402


def timed(fn, min_time: float) -> float:
    """Milliseconds per call of ``fn``, over at least ``min_time`` seconds."""
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / n * 1000.0


def interleaved(contenders: dict, passes: int, min_time: float) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in contenders}
    names = list(contenders)
    for p in range(passes):
        for name in names[p % len(names):] + names[: p % len(names)]:
            times[name].append(timed(contenders[name], min_time))
    return {k: statistics.median(v) for k, v in times.items()}


def cache_bench(passes: int) -> dict[str, float]:
    data = inputs()["jpeg_1280x960"].images[0]
    spec = mmf.preset("qwen2_vl_class_defaults")
    inp = mmf.MmInput(images=[data], input_ids=[1, spec["image_token_id"], 2])
    plain = mmf.pipeline_from_spec(spec)
    cached = mmf.pipeline_from_spec(spec, cache=mmf.FeatureCache(256 << 20))
    assert_same_output(plain.process(inp), cached.process(inp), "cached vs plain")
    assert_same_output(plain.process(inp), cached.process(inp), "cache hit vs plain")
    ms = interleaved({"uncached": lambda: plain.process(inp), "cached": lambda: cached.process(inp)}, passes, 0.5)
    return {**ms, "ratio": ms["uncached"] / ms["cached"]}


class _SlowHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    bodies: dict[str, bytes] = {}
    latency = 0.02

    def do_GET(self) -> None:  # noqa: N802
        time.sleep(self.latency)
        body = self.bodies[self.path]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def many_bench(passes: int, latency: float) -> dict[str, float]:
    photos = [inputs()[name].images[0] for name in ("jpeg_640x480", "jpeg_1280x960")]
    _SlowHandler.bodies = {f"/{k}.jpg": photos[k % 2] + bytes(k) for k in range(32)}  # 32 distinct sources
    _SlowHandler.latency = latency
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SlowHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        spec = mmf.preset("qwen2_vl_class_defaults")
        pipe = mmf.pipeline_from_spec(spec)
        reqs = [mmf.MmInput(images=[f"{base}/{k}.jpg"], input_ids=[1, spec["image_token_id"], 2]) for k in range(32)]
        loop = [pipe.process(r) for r in reqs]
        for k, (a, b) in enumerate(zip(loop, pipe.process_many(reqs))):
            assert_same_output(a, b, f"request {k}")
        ms = interleaved(
            {
                "loop of process": lambda: [pipe.process(r) for r in reqs],
                "process_many": lambda: pipe.process_many(reqs),
            },
            passes, 0.0,
        )
        return {**ms, "ratio": ms["loop of process"] / ms["process_many"]}
    finally:
        server.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    args = ap.parse_args()
    c = cache_bench(args.passes)
    print(f"cache, 1280x960 qwen2_vl: uncached {c['uncached']:.2f} ms, cached {c['cached']:.3f} ms, "
          f"{c['ratio']:.0f}x faster (target >= 20x)")
    m = many_bench(args.passes, args.latency_ms / 1000.0)
    print(f"32 URL requests, {args.latency_ms:.0f} ms server latency: loop of process {m['loop of process']:.0f} ms, "
          f"process_many {m['process_many']:.0f} ms, {m['ratio']:.2f}x faster (target >= 1.5x)")


if __name__ == "__main__":
    main()
