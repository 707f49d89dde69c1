"""Running a batch: cut shards, skip finished ones, fan the rest out, report.

Workers are spawned processes (the parent holds threads: a forked child could inherit a
held lock), each with one pipeline and ``cores // workers`` cores of ``par`` threads, so
workers x threads never exceeds the machine. With one worker the shards run in this
process. Progress (tqdm, on stderr, only on a TTY) counts images as each row group is
written; the summary is computed from the shard files, so a resumed run reports the
whole dataset.
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import queue as queue_module
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from importlib import resources
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from .. import par
from ..arrow import process_requests
from ..arrow.schema import check_pixels
from ..errors import LayoutError, SpecError
from ..pipeline import Pipeline, pipeline_from_spec
from ..request import MmInput
from .manifest import Entry, default_prompt, fingerprint, read_manifest
from .shards import Job, claim_directory, finished, init_worker, run_record, shard_path, work, write_shard

FAILED_IDS_SHOWN = 10  # the summary names this many failed requests, then counts the rest


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _check_prompt(pipeline: Pipeline, prompt: Sequence[int]) -> None:
    """A prompt that does not fit the family would make every row an error."""
    sample = (resources.files("mm_framework") / "data" / "sample.jpg").read_bytes()
    try:
        pipeline.process(MmInput(images=[sample], input_ids=list(prompt)))
    except LayoutError as e:
        raise SpecError(
            f"the prompt {list(prompt)} does not fit family {pipeline.family!r} ({e}): give --input-ids"
        ) from None


def _run_shards(job: Job, shards: Sequence[Sequence[Entry]], todo: Sequence[int], workers: int, bar: tqdm) -> None:
    errors = 0

    def report(images: int, _requests: int, failed: int) -> None:
        nonlocal errors
        errors += failed
        bar.update(images)
        bar.set_postfix(errors=errors, refresh=False)

    threads = par.threads_for_cpus(max(1, usable_cores() // workers))
    if workers == 1:
        before = par.threads()
        par.set_threads(threads)
        try:
            pipeline = job.pipeline()
            for k in todo:
                write_shard(pipeline, job, k, shards[k], report)
        finally:
            par.set_threads(before)
        return
    ctx = multiprocessing.get_context("spawn")
    progress = ctx.Queue()
    pool_options = {"mp_context": ctx, "initializer": init_worker, "initargs": (job, threads, progress)}
    with ProcessPoolExecutor(workers, **pool_options) as pool:
        pending = {pool.submit(work, k, shards[k]) for k in todo}
        try:
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in done:
                    f.result()  # a failed shard fails the run
                _drain(progress, report)
        finally:
            for f in pending:
                f.cancel()
        _drain(progress, report)


def _drain(progress: Any, report: Any) -> None:
    while True:
        try:
            report(*progress.get_nowait())
        except queue_module.Empty:
            return


def _failed(table: pa.Table) -> list[str]:
    """A line naming the error rows' ids in manifest order, the first few then how many more;
    none without errors."""
    failed = table.filter(pc.is_valid(table.column("error_type"))).column("id").to_pylist()
    if not failed:
        return []
    more = len(failed) - FAILED_IDS_SHOWN
    shown = ", ".join(json.dumps(i) for i in failed[:FAILED_IDS_SHOWN])
    return [f"failed: {shown}" + (f" and {more} more" if more > 0 else "")]


def _summary(out: str, entries: Sequence[Entry], shards: int, skipped: int, images: int, seconds: float) -> str:
    table = pq.read_table(out, columns=["id", "num_tokens", "error_type"])
    errors = collections.Counter(e for e in table.column("error_type").to_pylist() if e is not None)
    total_bytes = sum(os.path.getsize(shard_path(out, k)) for k in range(shards))
    by_class = ", ".join(f"{name} {n}" for name, n in sorted(errors.items()))
    rate = images / seconds if seconds > 0 else 0.0
    lines = [
        f"requests: {len(entries)} ({sum(len(e.images) for e in entries)} images) in {shards} shard(s) in {out}",
        f"errors: {sum(errors.values())}" + (f" ({by_class})" if by_class else ""),
        *_failed(table),
        f"tokens: {pc.sum(table.column('num_tokens')).as_py() or 0}",
        f"written: {total_bytes / 2**20:.1f} MiB",
        f"this run: {images} images in {seconds:.1f} s ({rate:.1f} images/s)"
        + (f"; {skipped} finished shard(s) skipped" if skipped else ""),
    ]
    return "\n".join(lines)


def execute(
    manifest: str, spec: dict[str, Any], out: str, pixels: str, workers: int | None, shard_size: int,
    input_ids: Sequence[int] | None, cache_mb: int = 0,
) -> str:
    """Run (or resume) a batch; the summary text. ``MmError`` when the run cannot start."""
    check_pixels(pixels)
    entries = read_manifest(manifest)
    pipeline = pipeline_from_spec(spec)
    spec_json = json.dumps(pipeline.spec, sort_keys=True)
    process_requests(pipeline, [], pixels=pixels)  # the mode is supported and the schema derivable
    needs_prompt = any(e.problem is None and e.input_ids is None and e.text is None for e in entries)
    placeholders = pipeline.capabilities.placeholders
    prompt = default_prompt(pipeline.family, placeholders, input_ids) if needs_prompt or input_ids is not None else ()
    if needs_prompt:
        _check_prompt(pipeline, prompt)
    shards = [entries[k : k + shard_size] for k in range(0, len(entries), shard_size)]
    claim_directory(out, run_record(spec_json, pixels, shard_size, prompt, fingerprint(entries), len(entries)))
    done = finished(out, len(shards))
    todo = [k for k in range(len(shards)) if k not in done]
    job = Job(spec_json, pixels, out, tuple(prompt), cache_mb)
    total = sum(len(e.images) for e in entries)
    skipped_images = sum(len(e.images) for k in done for e in shards[k])
    t0 = time.perf_counter()
    with tqdm(total=total, initial=skipped_images, unit="img", disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
        if todo:
            _run_shards(job, shards, todo, min(workers or usable_cores(), len(todo)), bar)
    return _summary(out, entries, len(shards), len(done), total - skipped_images, time.perf_counter() - t0)
