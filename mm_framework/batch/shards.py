"""Parquet shards: one worker writes one shard, under a temporary name, then renames it.

A shard is a fixed slice of the manifest (``part-NNNNN.parquet``), so a finished file is
final and a rerun skips it; a run killed mid-shard leaves only a ``.part-*.tmp`` file,
which the dataset readers ignore (leading dot) and the rerun overwrites. ``_batch.json``
records what the shards were cut from, so a rerun with another spec or manifest is
refused instead of mixing two runs in one directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.parquet as pq

from .. import par
from ..arrow import SCHEMA_VERSION, process_requests
from ..errors import InvalidInputError, MmError, SpecError
from ..cache import FeatureCache
from ..pipeline import Pipeline, pipeline_from_spec
from ..request import MmInput
from .manifest import Entry

RUN_FILE = "_batch.json"
# How a refused rerun names the keys of RUN_FILE that differ (others by their key).
_RUN_LABELS = {
    "pixels": "pixel mode", "shard_size": "shard size", "default_prompt": "default prompt",
    "manifest_digest": "manifest", "requests": "request count", "schema_version": "schema version",
}
# Requests per row group: bounds a worker's memory (a 1 MP image is ~7 MB of float32).
ROW_GROUP = {"f32": 8, "u8": 32, "none": 1024}
# Reports (items, requests, errors) as each row group is written.
Report = Callable[[int, int, int], None]


@attrs.frozen
class Job:
    """Everything a worker needs besides its shard's entries (small and picklable)."""

    spec_json: str
    pixels: str
    out: str
    prompt: tuple[int, ...]
    cache_mb: int = 0
    # Whether ``prompt`` is the user's --input-ids (one image's prompt) or the family's.
    prompt_given: bool = False
    # The modalities whose aux columns every shard has: the schema is the run's, not a shard's.
    modalities: tuple[str, ...] = ("image",)

    def pipeline(self) -> Pipeline:
        """This process's pipeline; with ``cache_mb``, a feature cache of its own, so an
        image repeated across the dataset's requests is processed once per worker."""
        cache = FeatureCache(self.cache_mb << 20) if self.cache_mb else None
        return pipeline_from_spec(self.spec_json, cache=cache)


def shard_path(out: str, index: int) -> str:
    return os.path.join(out, f"part-{index:05d}.parquet")


def finished(out: str, count: int) -> set[int]:
    return {k for k in range(count) if os.path.isfile(shard_path(out, k))}


def claim_directory(out: str, run: dict[str, Any]) -> None:
    """Create ``out`` for this run, or check that it holds the same run (resume)."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, RUN_FILE)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            before = json.load(f)
        differ = [_RUN_LABELS.get(k, k) for k in sorted(set(run) | set(before)) if run.get(k) != before.get(k)]
        if differ:
            what = f"{', '.join(differ[:-1])} and {differ[-1]} differ" if len(differ) > 1 else f"{differ[0]} differs"
            raise SpecError(f"{out} holds another run (its {what}): use another --out or empty it")
        return
    if any(n.startswith("part-") for n in os.listdir(out)):
        raise SpecError(f"{out} holds shards but no {RUN_FILE}: use another --out or empty it")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(run, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def run_record(
    spec_json: str, pixels: str, shard_size: int, prompt: Sequence[int], digest: str, n: int
) -> dict[str, Any]:
    return {
        "spec": spec_json, "pixels": pixels, "shard_size": shard_size, "default_prompt": list(prompt),
        "manifest_digest": digest, "requests": n, "schema_version": SCHEMA_VERSION,
    }


def to_input(entry: Entry, job: Job) -> MmInput | MmError:
    """The entry's request. Without ids or text, an all-image request repeats the job's
    prompt per image; one with videos or audios gets the pipeline's default prompt (one
    placeholder per item), which a one-image ``--input-ids`` cannot stand for."""
    if entry.problem is not None:
        return InvalidInputError(entry.problem)
    ids = entry.input_ids
    if ids is None and entry.text is None and entry.images_only:
        ids = tuple(job.prompt) * len(entry.images)
    elif ids is None and entry.text is None and job.prompt_given:
        return InvalidInputError(f"request {entry.id!r} has videos or audios: --input-ids is the prompt of one "
                                 f"image; give the request its own input_ids or text")
    try:
        return MmInput(images=entry.images, videos=entry.videos, audios=entry.audios, input_ids=ids, text=entry.text)
    except MmError as e:
        return e


def write_shard(pipeline: Pipeline, job: Job, index: int, entries: Sequence[Entry], report: Report) -> None:
    final, tmp = shard_path(job.out, index), os.path.join(job.out, f".part-{index:05d}.parquet.tmp")
    step = ROW_GROUP[job.pixels]
    with open(tmp, "wb") as f:
        writer = None
        for start in range(0, len(entries), step):
            part = entries[start : start + step]
            ids = pa.table({"id": pa.array([e.id for e in part], pa.string())})
            inputs = [to_input(e, job) for e in part]
            table = process_requests(pipeline, inputs, pixels=job.pixels, passthrough=ids,
                                     modality_names=job.modalities)
            if writer is None:
                writer = pq.ParquetWriter(f, table.schema, compression="zstd", use_dictionary=True)
            writer.write_table(table)
            report(sum(e.items for e in part), len(part), len(part) - table.column("error").null_count)
        assert writer is not None, "a shard is never empty"
        writer.close()
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)


# ----- the worker processes ----------------------------------------------------------

_worker: dict[str, Any] = {}


def init_worker(job: Job, threads: int | str, queue: Any) -> None:
    """Pool initializer: the thread budget, one pipeline per process, the report queue."""
    par.set_threads(threads)
    _worker.update(job=job, pipeline=job.pipeline(), queue=queue)


def work(index: int, entries: Sequence[Entry]) -> int:
    """Pool task: write shard ``index``; progress goes through the queue."""
    queue = _worker["queue"]
    write_shard(_worker["pipeline"], _worker["job"], index, entries, lambda *counts: queue.put(counts))
    return index
