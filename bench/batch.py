"""Batch benchmark: dataset throughput of the three pixel modes, and the token-count speed-up.

Usage (a venv with ``pip install ".[batch]" ./qwen_vl_plugin``)::

    python bench/batch.py                 # about a minute on 2 cores
    python bench/batch.py --images 96 --spec qwen2_5_vl

1. **Token count against full processing, per core.** The same 1280x960 JPEG requests
   (files on disk), on one thread (``par`` inline), interleaved over passes: per request
   through ``Pipeline.process`` and ``Pipeline.count_tokens`` (medians per image), and as
   a table through ``process_table`` with ``pixels="f32"`` and ``"none"`` (per image,
   Arrow columns included); each ratio of the medians.
2. **``mm-framework batch`` end to end.** The directory of those JPEGs through the real
   command path (process pool of the usable cores, zstd Parquet shards) in each pixel
   mode: wall time including worker start-up, images/s, MiB written and MiB/s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import mm_framework as mmf
from mm_framework import par
from mm_framework.arrow import process_table
from mm_framework.batch.runner import execute, usable_cores
from mm_framework.kernels import kernel_mode
from mm_framework.testing import sample_image


def make_images(root: Path, n: int) -> list[Path]:
    paths = []
    for k in range(n):
        path = root / f"{k:04d}.jpg"
        path.write_bytes(sample_image(1280, 960, "JPEG", k))
        paths.append(path)
    return paths


def per_image_ms(fn, requests, passes: int) -> list[float]:
    """Per pass, the median milliseconds of one request."""
    out = []
    for _ in range(passes):
        times = []
        for inp in requests:
            t0 = time.perf_counter()
            fn(inp)
            times.append((time.perf_counter() - t0) * 1000.0)
        out.append(statistics.median(times))
    return out


def token_count_speedup(spec: dict, paths: list[Path], passes: int) -> str:
    pipe = mmf.pipeline_from_spec(spec)
    ph = pipe.capabilities.placeholders["image"]
    requests = [mmf.MmInput(images=[p], input_ids=[1, ph, 2]) for p in paths]
    for inp in requests[:4]:  # the same ids and positions, checked first
        full, counted = pipe.process(inp), pipe.count_tokens(inp)
        assert full.input_ids.tobytes() == counted.input_ids.tobytes() and full.positions == counted.positions
    table = pa.table(
        {"id": [p.name for p in paths], "images": [str(p) for p in paths], "input_ids": [[1, ph, 2]] * len(paths)}
    )
    par.set_threads("inline")
    full, count, rows_full, rows_count = [], [], [], []
    for _ in range(passes):  # interleaved, so a busy neighbour hits both alike
        full += per_image_ms(pipe.process, requests, 1)
        count += per_image_ms(pipe.count_tokens, requests, 1)
        for mode, sink in (("f32", rows_full), ("none", rows_count)):
            t0 = time.perf_counter()
            process_table(pipe, table, pixels=mode)
            sink.append((time.perf_counter() - t0) * 1000.0 / len(paths))
    par.set_threads(None)
    lines = []
    pairs = (("Pipeline.process / count_tokens", full, count), ("process_table f32 / none", rows_full, rows_count))
    for what, f, c in pairs:
        f, c = statistics.median(f), statistics.median(c)
        lines.append(f"{what}: {f:.2f} / {c:.3f} ms per image, speed-up {f / c:.0f}x (one thread)")
    return "\n".join(lines)


def batch_modes(spec: dict, root: Path, n: int) -> list[str]:
    lines = [f"{'mode':<5} {'wall s':>7} {'images/s':>9} {'MiB':>8} {'MiB/s':>7}"]
    for mode in ("f32", "u8", "none"):
        out = Path(tempfile.mkdtemp(prefix=f"mm-bench-{mode}-"))
        t0 = time.perf_counter()
        execute(str(root), spec, str(out / "ds"), mode, None, 16, None)
        wall = time.perf_counter() - t0
        mib = sum(f.stat().st_size for f in (out / "ds").glob("part-*.parquet")) / 2**20
        lines.append(f"{mode:<5} {wall:7.2f} {n / wall:9.1f} {mib:8.1f} {mib / wall:7.1f}")
        for f in (out / "ds").iterdir():
            f.unlink()
        (out / "ds").rmdir()
        out.rmdir()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--spec", default="qwen2_vl", help="a preset")
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    spec = mmf.preset(args.spec)
    with tempfile.TemporaryDirectory(prefix="mm-bench-images-") as tmp:
        root = Path(tmp)
        paths = make_images(root, args.images)
        size = sum(p.stat().st_size for p in paths) / len(paths) / 1024
        print(f"{args.images} JPEGs 1280x960 (~{size:.0f} KiB each), spec {args.spec}, {usable_cores()} cores, "
              f"kernels {kernel_mode()}")
        print(token_count_speedup(spec, paths, args.passes))
        print("\n".join(batch_modes(spec, root, args.images)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
