"""``mm-framework batch``: the subcommand's arguments, and the check for its extra.

Importing this module costs nothing (``mm_framework.cli`` does it for every command):
pyarrow and tqdm are imported only when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvalidInputError, UnsupportedError
from ..request import input_ids_from_arg
from ..specs import spec_from_arg

PIXEL_MODES = ("f32", "u8", "none")
DEFAULT_SHARD_SIZE = 256


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "batch",
        help="preprocess a dataset (JSONL manifest, directory or glob of media files) into Parquet shards",
        description="Preprocess every request of MANIFEST into Parquet shards in --out (docs/batch.md). "
        "A rerun with the same arguments resumes: finished shards are skipped.",
    )
    p.add_argument("manifest", help="a JSONL file (one request per line), a directory or a glob of media files")
    p.add_argument("--spec", required=True, help="preset, model directory, JSON file or inline JSON")
    p.add_argument("--out", required=True, help="output directory of part-NNNNN.parquet shards")
    p.add_argument(
        "--pixels", choices=PIXEL_MODES, default="f32",
        help="f32: float32 features; u8: the family's uint8 pixels (compact, exact on rebuild); none: token counts",
    )
    p.add_argument("--workers", type=int, help="worker processes (default: the usable cores)")
    p.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE, help="requests per shard file")
    p.add_argument("--cache-mb", type=int, default=0,
                   help="a feature cache of this many MiB per worker: images repeated across requests are "
                   "processed once (default 0: none; repeats within one request always are)")
    p.add_argument("--input-ids", help="prompt ids of one image, for requests without input_ids or text "
                   "(default: the spec's image_token_id)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    try:
        import pyarrow  # noqa: F401
        import tqdm  # noqa: F401
    except ImportError as e:
        raise UnsupportedError(f"mm-framework batch needs {e.name}: pip install 'mm-framework[batch]'") from None
    from .runner import execute

    if args.cache_mb < 0:
        raise InvalidInputError(f"--cache-mb must be at least 0, got {args.cache_mb}")
    for name in ("workers", "shard_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InvalidInputError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    ids = None if args.input_ids is None else input_ids_from_arg(args.input_ids)
    spec = spec_from_arg(args.spec)
    summary = execute(args.manifest, spec, args.out, args.pixels, args.workers, args.shard_size, ids, args.cache_mb)
    print(summary)
    return 0
