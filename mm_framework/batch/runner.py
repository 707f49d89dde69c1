"""Running a batch: cut shards, skip finished ones, fan the rest out, report.

Workers are spawned processes (the parent holds threads: a forked child could inherit a
held lock), each with one pipeline and ``cores // workers`` cores of ``par`` threads, so
workers x threads never exceeds the machine. With one worker the shards run in this
process. Progress (tqdm, on stderr, only on a TTY) counts items (images, videos, audios)
as each row group is written; the summary is computed from the shard files, so a resumed
run reports the whole dataset.
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
from .manifest import MEDIA_KEYS, Entry, default_prompt, fingerprint, read_manifest
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

    def report(items: int, _requests: int, failed: int) -> None:
        nonlocal errors
        errors += failed
        bar.update(items)
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


def _counted(entries: Sequence[Entry]) -> str:
    """``12 images`` or ``3 images, 1 video, 2 audios``: the manifest's items by modality."""
    counts = [(sum(len(getattr(e, plural)) for e in entries), one, plural) for one, plural in MEDIA_KEYS.items()]
    shown = [c for c in counts if c[0]] or counts[:1]
    return ", ".join(f"{n} {one if n == 1 else plural}" for n, one, plural in shown)


def _summary(out: str, entries: Sequence[Entry], shards: int, skipped: int, items: int, seconds: float) -> str:
    table = pq.read_table(out, columns=["id", "num_tokens", "error_type"])
    errors = collections.Counter(e for e in table.column("error_type").to_pylist() if e is not None)
    total_bytes = sum(os.path.getsize(shard_path(out, k)) for k in range(shards))
    by_class = ", ".join(f"{name} {n}" for name, n in sorted(errors.items()))
    rate = items / seconds if seconds > 0 else 0.0
    unit = "images" if all(e.images_only for e in entries) else "items"
    lines = [
        f"requests: {len(entries)} ({_counted(entries)}) in {shards} shard(s) in {out}",
        f"errors: {sum(errors.values())}" + (f" ({by_class})" if by_class else ""),
        *_failed(table),
        f"tokens: {pc.sum(table.column('num_tokens')).as_py() or 0}",
        f"written: {total_bytes / 2**20:.1f} MiB",
        f"this run: {items} {unit} in {seconds:.1f} s ({rate:.1f} {unit}/s)"
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
    # The aux columns of every modality the manifest uses that the family takes (the others'
    # items are error rows), in item order; an image-only run keeps its schema.
    used = {m for e in entries for m, plural in MEDIA_KEYS.items() if getattr(e, plural)}
    modalities = tuple(m for m in MEDIA_KEYS if m in used and m in pipeline.capabilities.modalities) or ("image",)
    process_requests(pipeline, [], pixels=pixels, modality_names=modalities)  # the mode works, the schema derives
    # Only all-image requests without ids or text use the one-image prompt (to_input).
    needs_prompt = any(e.problem is None and e.input_ids is None and e.text is None and e.images_only
                       for e in entries)
    placeholders = pipeline.capabilities.placeholders
    prompt = default_prompt(pipeline.family, placeholders, input_ids) if needs_prompt or input_ids is not None else ()
    if needs_prompt:
        _check_prompt(pipeline, prompt)
    shards = [entries[k : k + shard_size] for k in range(0, len(entries), shard_size)]
    claim_directory(out, run_record(spec_json, pixels, shard_size, prompt, fingerprint(entries), len(entries)))
    done = finished(out, len(shards))
    todo = [k for k in range(len(shards)) if k not in done]
    job = Job(spec_json, pixels, out, tuple(prompt), cache_mb, prompt_given=input_ids is not None,
              modalities=modalities)
    total = sum(e.items for e in entries)
    skipped_items = sum(e.items for k in done for e in shards[k])
    unit = "img" if all(e.images_only for e in entries) else "item"
    t0 = time.perf_counter()
    with tqdm(total=total, initial=skipped_items, unit=unit, disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
        if todo:
            _run_shards(job, shards, todo, min(workers or usable_cores(), len(todo)), bar)
    return _summary(out, entries, len(shards), len(done), total - skipped_items, time.perf_counter() - t0)
