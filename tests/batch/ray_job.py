"""The Ray checks, run by test_ray.py in a process of its own (so a hang is killed by a
timeout): prints one JSON object of findings. Argument: a scratch directory."""

from __future__ import annotations

import json
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import ray
import ray.data

import mm_framework as mmf
from mm_framework import par
from mm_framework.arrow import process_table
from mm_framework.ray import Preprocessor, preprocess
from mm_framework.testing import sample_image

SPEC = mmf.preset("qwen2_vl")


@ray.remote
class Probe:
    """An actor building a Preprocessor, to see what it sized and what it refuses."""

    def threads(self, spec):
        Preprocessor(spec)
        return par.threads()

    def refusal(self, spec):
        try:
            Preprocessor(spec)
        except mmf.MmError as e:
            return f"{type(e).__name__}: {e}"
        return None


def main(scratch: str) -> dict:
    ph = SPEC["image_token_id"]
    images = [sample_image(64 + 8 * k, 48, "PNG", k) for k in range(6)] + [b"not an image"]
    rows = [{"id": f"r{k}", "images": [im], "input_ids": [1, ph, 2]} for k, im in enumerate(images)]
    rows.append({"id": "two", "images": images[:2], "input_ids": [ph, ph]})
    direct = process_table(mmf.pipeline_from_spec(SPEC), pa.Table.from_pylist(rows))
    found: dict = {}

    ds = preprocess(ray.data.from_items(rows), SPEC, actors=1, batch_size=3)
    got = pa.concat_tables(ray.get(ds.to_arrow_refs())).sort_by("id")
    found["preprocess_equal"] = got.equals(direct.sort_by("id"), check_metadata=True)
    found["errors"] = got.column("error_type").to_pylist()

    out = os.path.join(scratch, "u8")
    ray.data.from_items(rows).map_batches(
        Preprocessor,
        fn_constructor_kwargs={"spec": SPEC, "pixels": "u8"},
        batch_format="pyarrow",
        batch_size=4,
        compute=ray.data.ActorPoolStrategy(size=1),
        num_cpus=1,
    ).write_parquet(out)
    written = pq.read_table(out).sort_by("id")
    want = process_table(mmf.pipeline_from_spec(SPEC), pa.Table.from_pylist(rows), pixels="u8").sort_by("id")
    found["write_parquet_equal"] = written.equals(want)
    found["write_parquet_metadata"] = written.schema.metadata == want.schema.metadata

    # One probe at a time: a second actor would wait forever for CPUs the first holds.
    for cpus in (2, 1):
        probe = Probe.options(num_cpus=cpus).remote()
        found[f"threads_with_{cpus}_cpus"] = ray.get(probe.threads.remote(SPEC))
        found["refusal"] = ray.get(probe.refusal.remote({"family": "no_such_family"}))
        ray.kill(probe)
    return found


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 2**20, log_to_driver=False)
    try:
        result = main(sys.argv[1])
    finally:
        ray.shutdown()
    print("RESULT " + json.dumps(result))
