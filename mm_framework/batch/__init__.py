"""``mm-framework batch``: a dataset manifest to Parquet shards on a local process pool.

* :mod:`.command`: the subcommand's arguments (cheap to import: no pyarrow);
* :mod:`.manifest`: JSONL manifests, directories and globs as request entries;
* :mod:`.shards`: one shard written under a temporary name, the run record, the workers;
* :mod:`.runner`: shards, the process pool, progress and the summary.

The rows are :mod:`mm_framework.arrow`'s; docs/batch.md describes the whole of it.
"""
