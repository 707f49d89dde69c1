"""mm-framework: process a request, process a chat request, inspect what a model sees, count
tokens, list plugins, and batch a dataset (JSONL manifest, directory or glob of images) into
Parquet shards.

Every command but plugins takes --spec as a preset name, a model directory (config.json
and preprocessor_config.json), a JSON file or inline JSON; chat takes only a model directory
(it reads the tokenizer and chat template too). Errors print their typed class and message
and exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from . import __version__, kernels, list_families, picture, plugins
from .batch.command import add_parser as add_batch_parser
from .cache import FeatureCache
from .carriers import MRope
from .driver import AUDIO_RATE
from .errors import InvalidInputError, MmError
from .family import bind
from .media.decode import VIDEO_HINT
from .media.policy import URL_PREFIXES
from .pipeline import Pipeline, pipeline_from_spec
from .request import MmInput, Output
from .request import input_ids_from_arg as _ids
from .settings import check_environment
from .specs import spec_from_arg as _spec

DEFAULT_PRESET = "qwen2_vl"
SAMPLE = "sample.jpg"
LARGE_OUTPUT = 1 << 30  # writing more than this needs --force


def _source(arg: str) -> str | Path:
    if arg.startswith(URL_PREFIXES):
        return arg
    return Path(arg)


def _request(pipe: Pipeline, args: argparse.Namespace) -> tuple[MmInput, list[str]]:
    images = list(args.images or ())
    videos, audios = (list(getattr(args, name, None) or ()) for name in ("video", "audio"))
    if not images and not videos and not audios:
        images = [str(resources.files("mm_framework") / "data" / SAMPLE)]
        names = [f"<bundled {SAMPLE}>"]
    else:
        names = images + videos + audios
    # Without --input-ids the pipeline builds its default prompt, one placeholder per item.
    ids = None if args.input_ids is None else _ids(args.input_ids)
    inp = MmInput(images=[_source(a) for a in images], videos=[_source(v) for v in videos],
                  audios=[_source(a) for a in audios], input_ids=ids)
    return inp, names


def _out_path(text: str | None, suffix: str) -> Path | None:
    """The path that will be written (``suffix`` added as numpy/Pillow would), checked now."""
    if text is None:
        return None
    path = Path(text if text.endswith(suffix) else text + suffix)
    if not path.parent.is_dir():
        raise InvalidInputError(f"--out {text!r}: directory {str(path.parent)!r} does not exist")
    return path


def _item_doc(i: int, item: Any, span: tuple[int, int], name: str) -> dict[str, Any]:
    return {
        "item": i, "source": name, "modality": item.modality, "size": item.size, "processed_size": item.processed_size,
        "frames": item.frames,
        "geometry": _geometry_text(item.geometry), "tokens": span[1] - span[0] + 1, "span": span,
        "hash": f"{item.hash:#018x}",
        "feature": None if item.feature is None else {"dtype": item.feature.dtype, "shape": list(item.feature.shape)},
        "aux": {k: _shown(v.array) if v.array.size <= 8 else list(v.shape) for k, v in item.aux.items()},
    }


def _f32(x: float) -> float:
    """``x`` as the shortest decimal that reads back as its float32: the summary shows 0.2
    where the f32 widens to 0.20000000298023224 (the arrays written keep every bit)."""
    return float(str(np.float32(x)))


def _shown(array: np.ndarray) -> Any:
    if array.dtype != np.float32:
        return array.tolist()
    return np.array([_f32(x) for x in array.ravel()], dtype=object).reshape(array.shape).tolist()


def _geometry_text(geometry: Any) -> str:
    """The geometry's repr, its floats (a video's timestamps, ``second_per_grid_t``) as :func:`_f32` shows them."""
    if not attrs.has(type(geometry)):
        return repr(geometry)
    floats = {f.alias: _rounded(getattr(geometry, f.name)) for f in attrs.fields(type(geometry))
              if f.init and isinstance(getattr(geometry, f.name), (float, tuple))}
    return repr(attrs.evolve(geometry, **floats))


def _rounded(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_rounded(v) for v in value)
    return _f32(value) if isinstance(value, float) else value


def _summary(pipe: Pipeline, out: Output, inp: MmInput, names: Sequence[str], seconds: float) -> dict[str, Any]:
    # Items come out in prompt order; name each by its input (images first, then videos).
    name_of = {(m, k): names[i] for i, (m, k) in enumerate(_numbered(inp))}
    seen: dict[str, int] = {}
    doc = {
        "spec": pipe.spec,
        "tokens": len(out.input_ids),
        "items": [_item_doc(i, it, sp, name_of.get((it.modality, _next(seen, it.modality)), "?"))
                  for i, (it, sp) in enumerate(zip(out.items, out.offsets))],
        "positions": (
            {"kind": "mrope", "delta": out.positions.delta} if isinstance(out.positions, MRope) else {"kind": "rope1d"}
        ),
        "layout": picture.layout_text(out),
        "ms": round(seconds * 1000, 2),
    }
    return doc


def _numbered(inp: MmInput) -> list[tuple[str, int]]:
    """``(modality, k)`` of every item: the k-th of its modality, in item-number order."""
    seen: dict[str, int] = {}
    return [(it.modality, _next(seen, it.modality)) for it in inp.items]


def _next(seen: dict[str, int], modality: str) -> int:
    """The next input of ``modality`` in prompt order (each modality's items keep their order)."""
    seen[modality] = seen.get(modality, -1) + 1
    return seen[modality]


def _print_summary(doc: dict[str, Any]) -> None:
    print(f"spec: {json.dumps(doc['spec'], sort_keys=True)}")
    print(f"input_ids: {doc['tokens']} tokens")
    for it in doc["items"]:
        size = ""  # audio has no pixel size
        if it["size"] is not None:
            (w, h), (pw, ph) = it["size"], it["processed_size"] or it["size"]
            size = f"  {w}x{h} -> {pw}x{ph}"
        feat = it["feature"]
        aux = ", ".join(f"{k}={v}" for k, v in it["aux"].items())
        frames = "" if it["frames"] is None else f"  {it['frames']} frames"
        print(f"item {it['item']}: {it['modality']} {it['source']}{size}{frames}  {it['geometry']}  "
              f"tokens {it['tokens']} at [{it['span'][0]}, {it['span'][1]}]  feature {feat['dtype']} {feat['shape']}"
              f"  {aux}  hash {it['hash']}")
    pos = doc["positions"]
    print(f"positions: M-RoPE, delta {pos['delta']}" if pos["kind"] == "mrope" else "positions: 1-D RoPE")
    print(f"layout: {doc['layout']}")
    print(f"time: {doc['ms']:.1f} ms")


def _arrays(out: Output) -> dict[str, np.ndarray]:
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
    return arrays


def cmd_process(args: argparse.Namespace) -> int:
    out_path = _out_path(args.out, ".npz")
    if args.cache_mb < 0:
        raise InvalidInputError(f"--cache-mb must be at least 0, got {args.cache_mb}")
    cache = FeatureCache(args.cache_mb << 20) if args.cache_mb else None
    pipe = pipeline_from_spec(_spec(args.spec), cache=cache)
    inp, names = _request(pipe, args)
    t0 = time.perf_counter()
    out = pipe.process(inp)
    doc = _summary(pipe, out, inp, names, time.perf_counter() - t0)
    return _emit(doc, out, out_path, args, {"cache": attrs.asdict(cache.stats())} if cache is not None else None)


def _emit(doc: dict[str, Any], out: Output, out_path: Path | None, args: argparse.Namespace,
          more: dict[str, Any] | None = None) -> int:
    """Write ``--out`` (refused above LARGE_OUTPUT without ``--force``), then print the summary."""
    if out_path is not None:
        arrays = _arrays(out)
        size = sum(a.nbytes for a in arrays.values())
        if size > LARGE_OUTPUT and not args.force:
            raise InvalidInputError(
                f"--out would write {size / 2**30:.1f} GiB to {str(out_path)!r}; pass --force to write it"
            )
        np.savez(out_path, **arrays)
        doc["wrote"] = str(out_path)
    doc.update(more or {})
    if args.json:
        print(json.dumps(doc))
    else:
        _print_summary(doc)
        if out_path is not None:
            print(f"wrote {out_path}")
    return 0


# What a chat request body may carry besides its messages (OpenAI's tools, vLLM's extensions).
CHAT_KEYS = ("tools", "documents", "add_generation_prompt", "continue_final_message", "mm_processor_kwargs")


def _chat_body(arg: str) -> dict[str, Any]:
    """The messages file (``-`` for stdin): a list of messages, or a request body holding them."""
    name = "stdin" if arg == "-" else arg
    try:
        text = sys.stdin.read() if arg == "-" else Path(arg).read_text(encoding="utf-8")
        body = json.loads(text)
    except OSError as e:
        raise InvalidInputError(f"{name}: {e.strerror or e}") from None
    except ValueError as e:
        raise InvalidInputError(f"{name}: invalid JSON: {e}") from None
    if isinstance(body, list):
        return {"messages": body}
    if not isinstance(body, dict) or "messages" not in body:
        raise InvalidInputError(f"{name}: expected a list of messages or a request object with 'messages'")
    return body


def cmd_chat(args: argparse.Namespace) -> int:
    from .chat import Processor

    out_path = _out_path(args.out, ".npz")
    if not os.path.isdir(args.spec):
        raise InvalidInputError(f"chat reads the model's tokenizer and chat template: --spec must be a model "
                                f"directory, got {args.spec!r}")
    body = _chat_body(args.messages)
    extra = body.get("chat_template_kwargs") or {}
    if not isinstance(extra, dict):
        raise InvalidInputError("chat_template_kwargs must be an object")
    kwargs = {**extra, **{k: body[k] for k in CHAT_KEYS if body.get(k) is not None}}
    proc = Processor.from_model_dir(args.spec)
    t0 = time.perf_counter()
    out = proc.apply_chat_template(body["messages"], **kwargs)
    seconds = time.perf_counter() - t0
    inp, places = proc.request(body["messages"], **kwargs)
    doc = _summary(proc.pipeline, out, inp, [str(p) for p in places], seconds)
    if not args.json:
        return _emit(doc, out, out_path, args)
    template_kwargs = {k: v for k, v in kwargs.items() if k != "mm_processor_kwargs"}
    return _emit(doc, out, out_path, args, {"prompt": proc.render(body["messages"], **template_kwargs)})


def cmd_inspect(args: argparse.Namespace) -> int:
    out_path = _out_path(args.out, ".png")
    pipe = pipeline_from_spec(_spec(args.spec))
    inp, names = _request(pipe, args)
    out, media = pipe.decode(inp)
    panels = [picture.item_panel(m, it, span, i) for i, (m, it, span) in enumerate(zip(media, out.items, out.offsets))]
    first = inp.items[0].source
    path = out_path or Path(f"mm-inspect-{first.stem if isinstance(first, Path) else inp.items[0].modality}.png")
    picture.sheet(panels).save(path)
    print(picture.layout_text(out))
    print(f"wrote {path}")
    return 0


def _kernels() -> str:
    """Which pixel kernels run (MM_FRAMEWORK_KERNELS) and, for the native ones, the SIMD level.
    A bad environment setting raises: it is an error of the deployment, not "unavailable"."""
    check_environment()
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
        for note in plugins.hidden_note().split("; ")[1:]:
            print(f"  {note}")
    for f in fams:
        print(f"{f['name']}  ({f['distribution']} {f['version']})".replace(" )", ")"))
        # Hooks are listed from a built pipeline's family: a preset's spec, else the family's defaults.
        spec = next((p for p in presets.values() if p["family"] == f["name"]), {"family": f["name"]})
        try:
            hooks = bind(pipeline_from_spec(spec).spec).implemented()
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
    item = {"frames": args.frames, "fps": args.fps}
    if args.seconds is not None:
        item.update(seconds=args.seconds, sample_rate=args.rate)
    tokens = pipe.num_media_tokens(args.width, args.height, **item)
    if not args.json:
        print(tokens)
        return 0
    modality = "audio" if args.seconds is not None else "image" if args.frames is None else "video"
    doc = {"tokens": tokens, "family": pipe.family, "modality": modality}
    if modality == "audio":
        doc.update(seconds=args.seconds, sample_rate=args.rate)
    else:
        doc.update(size=[args.width, args.height], frames=args.frames, fps=args.fps)
    plan = pipe.plan_item(args.width, args.height, **item)
    doc.update(geometry=repr(plan.geometry), processed_size=None if plan.size is None else list(plan.size))
    print(json.dumps(doc))
    return 0


class _Version(argparse.Action):
    """``--version`` with the kernels in use, found when asked for (a bad environment
    setting exits 2 like any error, and fails no other command's parsing)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version and the kernels in use, and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"mm-framework {__version__}; {_kernels()}")  # an MmError goes to main's handler
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mm-framework", description=__doc__)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    spec_help = f"preset, model directory, JSON file or inline JSON (default {DEFAULT_PRESET})"
    for name, helptext, func in (
        ("process", "run one request and print a summary", cmd_process),
        ("inspect", "draw each item as the model sees it: images and video frames with their patch grid or "
         "tiles, audio as waveform and log-mel with its token boundaries", cmd_inspect),
    ):
        p = sub.add_parser(name, help=helptext, description=helptext)
        p.add_argument("images", nargs="*",
                       help="image paths or file:// data: http(s):// URLs (default: the bundled sample)")
        p.add_argument("--spec", default=DEFAULT_PRESET, help=spec_help)
        p.add_argument("--input-ids", help="prompt ids, comma or space separated (default: one placeholder per item)")
        p.set_defaults(func=func)
        p.add_argument("--video", action="append", metavar="CLIP", help="a video clip (repeatable), after the images")
        p.add_argument("--audio", action="append", metavar="FILE",
                       help="an audio file (repeatable), after the videos (needs mm-framework[audio])")
    p = sub.choices["process"]
    p.add_argument("--out", help="write every output array to this .npz (checked before any work)")
    p.add_argument("--force", action="store_true", help=f"write --out even above {LARGE_OUTPUT >> 30} GiB")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--cache-mb", type=int, default=0,
                   help="a feature cache of this many MiB "
                        "(default 0: none; repeats within a request are processed once)")
    sub.choices["inspect"].add_argument("--out", help="the PNG to write (default mm-inspect-<first image>.png here)")
    p = sub.add_parser("chat", help="a chat request through the model's chat template, tokenizer and family",
                       description="Render MESSAGES (a JSON list of chat messages, or an OpenAI-style request body "
                       "with 'messages', and optionally 'tools', 'mm_processor_kwargs', 'chat_template_kwargs', "
                       "'add_generation_prompt', 'continue_final_message') with the model directory's chat "
                       "template and tokenizer, process its media and print a summary (docs/chat.md; needs "
                       "mm-framework[chat]).")
    p.add_argument("messages", help="the messages JSON file, or - for stdin")
    p.add_argument("--spec", required=True, help="the model directory (config, preprocessor, tokenizer, template)")
    p.add_argument("--out", help="write every output array to this .npz (checked before any work)")
    p.add_argument("--force", action="store_true", help=f"write --out even above {LARGE_OUTPUT >> 30} GiB")
    p.add_argument("--json", action="store_true", help="print the summary, with the prompt, as one JSON object")
    p.set_defaults(func=cmd_chat)
    p = sub.add_parser("plugins", help="list installed families, their hooks and presets, and the kernels",
                       description="List the pixel kernels in use (native with their SIMD level, or portable), then "
                       "each installed family with its distribution and version, the hooks it implements and the "
                       "presets that select it.")
    p.set_defaults(func=cmd_plugins)
    p = sub.add_parser("tokens", help="pixel-free token count of one image (or clip) size, or audio length",
                       description="Print how many tokens the spec's model spends on an image of width x height "
                       "(or a clip of that frame size with --frames and --fps, for families that take video; or "
                       "--seconds of audio instead of a size, for families that take audio), from the family's "
                       "rules alone: no pixels or samples are read.")
    p.add_argument("width", type=int, nargs="?", help="the image's (or a clip frame's) width in pixels")
    p.add_argument("height", type=int, nargs="?", help="its height in pixels")
    p.add_argument("--frames", type=int, help="a clip of this many source frames")
    p.add_argument("--fps", type=float, help="the clip's source frame rate (needs --frames)")
    p.add_argument("--seconds", type=float, help="an audio item this long (instead of a size)")
    p.add_argument("--rate", type=int, default=AUDIO_RATE,
                   help=f"the audio's sample rate in Hz (with --seconds; default {AUDIO_RATE})")
    p.add_argument("--spec", default=DEFAULT_PRESET, help=spec_help)
    p.add_argument("--json", action="store_true",
                   help="print the count, the family, the size and the family's plan (geometry, processed size) "
                        "as JSON")
    p.set_defaults(func=cmd_tokens)
    add_batch_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # --version reads the environment while parsing
        if args.command is None:
            parser.print_help()
            return 0
        return args.func(args)
    except MmError as e:
        # A clip given as an image: the Python API's remedy is videos=, this one's --video.
        print(f"error: {type(e).__name__}: {str(e).replace(VIDEO_HINT, 'pass it with --video')}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
