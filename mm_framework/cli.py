"""``mm-framework``: process one request, list plugins, count tokens."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from . import __version__, kernels, list_families, pipeline_from_spec, plugins
from .carriers import MRope
from .request import MmInput, Output
from .errors import MmError, SpecError
from .media import image_size, resolve_sources

DEFAULT_PRESET = "qwen2_vl"
SAMPLE = "sample.jpg"


def _spec(text: str) -> dict[str, Any]:
    """A preset name, a path to a JSON file, or inline JSON."""
    found = plugins.presets()
    if text in found:
        return found[text]
    if os.path.isfile(text):
        with open(text, encoding="utf-8") as f:
            text = f.read()
    if not text.lstrip().startswith("{"):
        raise SpecError(f"--spec {text!r} is neither a preset ({', '.join(sorted(found)) or 'none installed'}), a file nor JSON")
    return json.loads(text)


def _source(arg: str) -> str:
    if arg.startswith(("http://", "https://", "data:", "file://")):
        return arg
    return os.path.abspath(arg)


def _ids(text: str) -> list[int]:
    try:
        return [int(t) for t in text.replace(",", " ").split()]
    except ValueError:
        raise SpecError(f"--input-ids must be integers separated by commas or spaces, got {text!r}") from None


def _summary(out: Output, sizes: Sequence[tuple[int, int]], names: Sequence[str], seconds: float) -> str:
    lines = [f"input_ids: {len(out.input_ids)} tokens"]
    for i, (item, (w, h), (s, e)) in enumerate(zip(out.items, sizes, out.offsets)):
        aux = ", ".join(
            f"{k}={v.array.tolist() if v.array.size <= 8 else list(v.shape)}" for k, v in item.aux.items()
        )
        lines.append(
            f"item {i}: {names[i]}  {w}x{h}  tokens {e - s + 1} at [{s}, {e}]  "
            f"feature {item.feature.dtype} {list(item.feature.shape)}  {aux}  hash {item.hash:#018x}"
        )
    pos = out.positions
    if isinstance(pos, MRope):
        lines.append(f"positions: M-RoPE {list(pos.positions.shape)}, delta {pos.delta}")
    else:
        lines.append("positions: 1-D RoPE")
    lines.append(f"time: {seconds * 1000:.1f} ms")
    return "\n".join(lines)


def _save(path: str, out: Output) -> None:
    arrays: dict[str, np.ndarray] = {
        "input_ids": np.asarray(out.input_ids),
        "offsets": np.asarray(out.offsets, dtype=np.int64).reshape(-1, 2),
        "hashes": np.asarray([it.hash for it in out.items], dtype=np.uint64),
    }
    if isinstance(out.positions, MRope):
        arrays["mrope_positions"] = np.asarray(out.positions.positions)
        arrays["mrope_delta"] = np.asarray(out.positions.delta, dtype=np.int64)
    for i, it in enumerate(out.items):
        arrays[f"item{i}_feature"] = np.asarray(it.feature.array)
        for name, t in it.aux.items():
            arrays[f"item{i}_{name}"] = np.asarray(t.array)
    np.savez(path, **arrays)


def cmd_process(args: argparse.Namespace) -> int:
    spec = _spec(args.spec)
    pipe = pipeline_from_spec(spec)
    if args.images:
        sources, names = [_source(a) for a in args.images], list(args.images)
    else:
        sample = resources.files("mm_framework") / "data" / SAMPLE
        sources, names = [str(sample)], [f"<bundled {SAMPLE}>"]
    datas = resolve_sources(sources, limits=pipe.limits)
    if args.input_ids is not None:
        ids = _ids(args.input_ids)
    elif "image_token_id" in spec:
        ids = [int(spec["image_token_id"])] * len(datas)
    else:
        raise SpecError("--input-ids is required: the spec has no image_token_id to build a default prompt")
    t0 = time.perf_counter()
    out = pipe.process(MmInput(images=datas, input_ids=ids))
    seconds = time.perf_counter() - t0
    print(f"spec: {json.dumps(spec, sort_keys=True)}")
    print(_summary(out, [image_size(d) for d in datas], names, seconds))
    if args.out:
        _save(args.out, out)
        print(f"wrote {args.out}")
    return 0


def _kernels() -> str:
    """Which pixel kernels run (``MM_FRAMEWORK_KERNELS``) and, for the native ones, the SIMD level."""
    try:
        mode = kernels.kernel_mode()
    except MmError as e:
        return f"kernels: unavailable ({e})"
    return f"kernels: native ({kernels.simd_level()})" if mode == "native" else "kernels: portable"


def cmd_plugins(args: argparse.Namespace) -> int:
    print(_kernels())
    fams = list_families()
    presets = plugins.presets()
    if not fams:
        print("no families installed")
    for f in fams:
        where = f"{f['distribution']} {f['version']}".strip()
        print(f"{f['name']}  ({where})")
        # Hooks are listed from a built pipeline: a preset's spec, else the family's defaults.
        spec = next((p for p in presets.values() if p["family"] == f["name"]), {"family": f["name"]})
        try:
            hooks = pipeline_from_spec(spec).hooks.implemented()
        except MmError:
            hooks = None
        if hooks:
            print(f"  hooks: {', '.join(hooks)}")
        mine = sorted(n for n, p in presets.items() if p["family"] == f["name"])
        if mine:
            print(f"  presets: {', '.join(mine)}")
    return 0


def cmd_tokens(args: argparse.Namespace) -> int:
    pipe = pipeline_from_spec(_spec(args.spec))
    print(pipe.num_media_tokens(args.width, args.height))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mm-framework", description=__doc__)
    parser.add_argument("--version", action="version", version=f"mm-framework {__version__}; {_kernels()}")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("process", help="run one request and print a summary")
    p.add_argument("images", nargs="*", help="image paths, file:// / data: / http(s) URLs (default: the bundled sample)")
    p.add_argument("--spec", default=DEFAULT_PRESET, help=f"preset name, JSON file or inline JSON (default {DEFAULT_PRESET})")
    p.add_argument("--input-ids", help="prompt ids, comma or space separated (default: one placeholder per image)")
    p.add_argument("--out", help="write every output array to this .npz")
    p.set_defaults(func=cmd_process)
    p = sub.add_parser("plugins", help="list installed families, their hooks and presets")
    p.set_defaults(func=cmd_plugins)
    p = sub.add_parser("tokens", help="pixel-free token count of one image size")
    p.add_argument("width", type=int)
    p.add_argument("height", type=int)
    p.add_argument("--spec", default=DEFAULT_PRESET)
    p.set_defaults(func=cmd_tokens)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        argv = ["process"]
    args = build_parser().parse_args(argv)
    if args.command is None:
        args = build_parser().parse_args(["process", *argv])
    try:
        return args.func(args)
    except MmError as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
