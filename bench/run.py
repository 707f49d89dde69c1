"""mm_framework preprocessing benchmark: ours, the reference processors and the floor, in one run.

Usage (any venv with numpy, Pillow, pluggy, attrs, blake3 and httpx; transformers, torch
and torchvision are optional and add the reference columns)::

    python bench/run.py                  # full run, a few minutes on 2 cores
    python bench/run.py --quick          # fewer passes, no memory probes
    python bench/run.py --markdown out.md

The repository's packages are put on ``sys.path`` when they are not installed, and the
families are registered in-process when no entry point provides them.

Method: every contender is warmed up, then contenders are interleaved (rotated order)
for ``--passes`` passes; each pass runs a contender for at least ``--min-time`` seconds
and the per-call median over passes is reported, so load changes on a shared machine hit
every contender alike. "Single-thread" means ``MM_FRAMEWORK`` inline (no pool) for us,
``torch.set_num_threads(1)`` for transformers' torchvision processor (transformers' PIL
processor is single-threaded by construction). Before anything is timed, each reference
contender's output is compared with the pipeline's, byte for byte.

Memory: each probe is a fresh interpreter that builds its inputs and pipeline, resets the
kernel's RSS high-water mark (``/proc/self/clear_refs``), runs one request, and reports
the peak RSS above the pre-request RSS, then reruns the request under ``tracemalloc``
(numpy buffers and Python objects; Pillow's own buffers are invisible to it).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# Only packages that are not installed come from the source tree: an installed
# mm_framework holds the compiled kernels, a source checkout usually does not, and
# importing it would time the portable kernels.
for package, sub in (("mm_framework", ""), ("qwen_vl_plugin", "qwen_vl_plugin"), ("inkling_plugin", "inkling_plugin")):
    path = str(REPO / sub) if sub else str(REPO)
    if importlib.util.find_spec(package) is None and path not in sys.path:
        sys.path.insert(0, path)
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework import par, plugins  # noqa: E402
from mm_framework.kernels import native  # noqa: E402

import baselines  # noqa: E402
from inputs import inputs  # noqa: E402

try:
    import inkling_plugin.plugin as _inkling_plugin
except ImportError:
    _inkling_plugin = None


def _register_families() -> None:
    """Register the repo's families in-process when no entry point provided them."""
    import qwen_vl_plugin.plugin as qwen

    known = plugins.families()
    if "qwen_vl" not in known:
        plugins.register(qwen, name="qwen_vl")
    if _inkling_plugin is not None and "inkling" not in known:
        plugins.register(_inkling_plugin, name="inkling")


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def cases(quick: bool) -> list[dict[str, Any]]:
    out = [
        {"label": "qwen_vl qwen2_vl pil", "preset": "qwen2_vl_class_defaults", "backend": "pil",
         "inputs": ("jpeg_640x480", "jpeg_1280x960", "png_screenshot_1920x1080", "request_8_images")},
        {"label": "qwen_vl qwen2_vl torchvision", "preset": "qwen2_vl_class_defaults", "backend": "torchvision",
         "inputs": ("jpeg_1280x960", "request_8_images")},
        {"label": "qwen_vl qwen2_5_vl pil", "preset": "qwen2_5_vl", "backend": "pil", "inputs": ("jpeg_4000x3000",)},
        {"label": "qwen_vl qwen3_vl pil", "preset": "qwen3_vl", "backend": "pil", "inputs": ("jpeg_1280x960",)},
    ]
    if _inkling_plugin is not None:
        out.append({"label": "inkling default", "spec": {"family": "inkling"},
                    "inputs": ("jpeg_640x480", "jpeg_1280x960", "request_8_images")})
    if quick:
        out = [c for c in out if c["inputs"] != ("jpeg_4000x3000",)]
    return out


def spec_of(case: dict[str, Any]) -> dict[str, Any]:
    if "spec" in case:
        return dict(case["spec"])
    return {**mmf.preset(case["preset"]), "backend": case["backend"]}


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


class Contender:
    """A timed callable plus the thread setting it runs under."""

    def __init__(
        self, fn: Callable[[], Any], threads: int | str = "inline", torch_threads: int = 1, kernels: str | None = None
    ) -> None:
        self.fn, self.threads, self.torch_threads, self.kernels = fn, threads, torch_threads, kernels

    def prepare(self) -> None:
        """Switch to this contender's threads and kernels; a new pool gets one untimed call
        first, so its threads' first-touch allocations (fresh malloc arenas) are not timed."""
        native.set_mode(self.kernels)
        if par.threads() != self.threads:
            par.set_threads(self.threads)
            if self.threads != "inline":
                self.fn()
        _torch_threads(self.torch_threads)


def _torch_threads(n: int) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)


def measure(contenders: dict[str, Contender], passes: int, min_time: float) -> dict[str, float]:
    """Median seconds per call of each contender, interleaved over ``passes`` passes."""
    names = list(contenders)
    for name in names:  # warm-up (and first-touch allocations) outside the timings
        contenders[name].prepare()
        contenders[name].fn()
    samples: dict[str, list[float]] = {n: [] for n in names}
    for p in range(passes):
        order = names[p % len(names) :] + names[: p % len(names)]
        for name in order:
            c = contenders[name]
            c.prepare()
            gc.collect()
            n, t0 = 0, time.perf_counter()
            while True:
                c.fn()
                n += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= min_time:
                    break
            samples[name].append(elapsed / n)
    return {n: statistics.median(v) for n, v in samples.items()}


# ---------------------------------------------------------------------------
# One case
# ---------------------------------------------------------------------------


def _request(pipe: mmf.Pipeline, datas: Sequence[bytes]) -> mmf.MmInput:
    pad = pipe.spec.get("image_token_id", -101)
    return mmf.MmInput(images=list(datas), input_ids=[pad] * len(datas))


def _features(out: mmf.Output) -> np.ndarray:
    return np.concatenate([it.feature.array for it in out.items])


def distinct_copies(datas: Sequence[bytes], n: int) -> list[bytes]:
    """``n`` copies of each encoded image that hash differently (a few bytes after the end
    of the image, which decoders ignore), so the in-request de-duplication does not fold
    them into one item."""
    return [d + bytes(k) for k in range(n) for d in datas]


def pool_sizes() -> list[int]:
    cores = os.cpu_count() or 1
    return sorted({1, 2, cores})


def run_case(case: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    spec = spec_of(case)
    pipe = mmf.pipeline_from_spec(spec)
    family = spec["family"]
    rows = []
    for input_name in case["inputs"]:
        inp = inputs()[input_name]
        datas = list(inp.images)
        n_img = len(datas)
        big = max(w * h for w, h in inp.sizes) >= 6_000_000
        req = _request(pipe, datas)
        reference = _features(pipe.process(req))
        theirs: dict[str, baselines.Run] = {}
        skipped: dict[str, str] = {}
        if family == "qwen_vl":
            for backend in ("pil", "torchvision"):
                if case["backend"] == "torchvision" and backend == "pil":
                    continue  # the PIL reference rounds differently from the torchvision backend
                why = baselines.hf_available(backend)
                if why:
                    skipped[f"hf_{backend}"] = why
                    continue
                theirs[f"hf_{backend}"] = baselines.hf_qwen(spec, backend)
            target = baselines.qwen_target(spec)
            resample = Image.Resampling.BICUBIC
        else:
            theirs["numpy"] = baselines.inkling_numpy(spec)
            target = baselines.inkling_target(spec)
            resample = Image.Resampling.LANCZOS
        if big and args.quick:
            theirs = {}
        _torch_threads(1)
        for name, fn in theirs.items():
            want = reference
            if name.startswith("hf_") and name != f"hf_{spec.get('backend')}":
                # The other backend's reference: checked against our pipeline for that backend.
                other = mmf.pipeline_from_spec({**spec, "backend": name.removeprefix("hf_")})
                want = _features(other.process(_request(other, datas)))
            baselines.check(f"{case['label']} {input_name} {name}", fn(datas), want)

        # Single thread: ours, theirs, floors, interleaved.
        contenders = {"ours": Contender(lambda: pipe.process(req))}
        if native.built():
            contenders["ours_portable"] = Contender(lambda: pipe.process(req), kernels="portable")
        for name, fn in theirs.items():
            contenders[name] = Contender(lambda fn=fn: fn(datas))
        contenders["floor_decode"] = Contender(lambda: baselines.floor_decode(datas))
        floor_resize = baselines.floor_decode_resize(target, resample)
        contenders["floor_decode_resize"] = Contender(lambda: floor_resize(datas))
        passes = max(3, args.passes // 2) if big else args.passes
        single = measure(contenders, passes, args.min_time)
        passes = args.passes  # the pool table holds the large-image latency target: full passes

        # The pool: throughput on a batch of copies (single-image inputs) or the request
        # itself, and the latency of one request at each pool size.
        copies = 1 if n_img > 1 else (2 if big else 8)
        batch = _request(pipe, distinct_copies(datas, copies))
        pooled = {}
        for p in pool_sizes():
            pooled[f"thr_{p}"] = Contender(lambda: pipe.process(batch), threads=p)
            pooled[f"lat_{p}"] = Contender(lambda: pipe.process(req), threads=p)
        pooled["thr_inline"] = Contender(lambda: pipe.process(batch), threads="inline")
        pooled["lat_inline"] = Contender(lambda: pipe.process(req), threads="inline")
        if "hf_torchvision" in theirs and n_img > 1:
            cores = os.cpu_count() or 1
            tv = theirs["hf_torchvision"]
            pooled["hf_torchvision_all_threads"] = Contender(lambda: tv(datas), torch_threads=cores)
        pool = measure(pooled, passes, args.min_time)
        par.set_threads(None)
        _torch_threads(1)
        rows.append({
            "case": case["label"], "input": input_name, "digest": inp.digest, "images": n_img, "copies": copies,
            "sizes": inp.sizes,
            "out_bytes": int(reference.nbytes), "single": single, "pool": pool, "skipped": skipped,
        })
        print(_row_line(rows[-1]), flush=True)
    return rows


def _row_line(r: dict[str, Any]) -> str:
    s, n = r["single"], r["images"]
    parts = [f"{r['case']:32s} {r['input']:26s} ours {n / s['ours']:7.1f} img/s"]
    for k in ("hf_pil", "hf_torchvision", "numpy"):
        if k in s:
            parts.append(f"{k} {n / s[k]:6.1f} (x{s[k] / s['ours']:.2f})")
    if "ours_portable" in s:
        parts.append(f"portable x{s['ours_portable'] / s['ours']:.2f} slower")
    parts.append(f"floor x{s['ours'] / s['floor_decode_resize']:.2f}")
    return " | ".join(parts)


# ---------------------------------------------------------------------------
# Thread scaling: the 2-thread target, measured with more passes than the tables
# ---------------------------------------------------------------------------


def scaling(case: dict[str, Any], input_name: str, passes: int, min_time: float) -> dict[str, float]:
    """Images/s on a batch of 8 copies: inline, then the pool at every size."""
    pipe = mmf.pipeline_from_spec(spec_of(case))
    batch = _request(pipe, distinct_copies(list(inputs()[input_name].images), 8))
    contenders = {"inline": Contender(lambda: pipe.process(batch), threads="inline")}
    for p in pool_sizes():
        contenders[f"pool {p}"] = Contender(lambda: pipe.process(batch), threads=p)
    res = measure(contenders, passes, min_time)
    par.set_threads(None)
    return {k: 8 / v for k, v in res.items()}


# ---------------------------------------------------------------------------
# Stage breakdown (where the time goes) for the qwen_vl pil path
# ---------------------------------------------------------------------------


def stages_qwen(preset: str, input_name: str, passes: int, min_time: float) -> dict[str, float]:
    """Median ms of each step of one qwen_vl item, single-thread, as the family runs them."""
    from mm_framework.media.decode import decode_rgb, take_source
    from mm_framework.kernels import resize_rgb
    from mm_framework.kernels import patchify_merged_blocks
    from qwen_vl_plugin.family import QwenVlFamily

    spec = {k: v for k, v in mmf.preset(preset).items() if k != "family"}
    fam = QwenVlFamily(spec)
    data = inputs()[input_name].images[0]
    media = decode_rgb(data)
    tw, th = fam.target_size(media.width, media.height)
    opts = fam.mm_decode_options()
    resized = fam.resized(media.rgb)
    s = fam.spec
    im = baselines.floor_decode([data])[0]
    pipe = mmf.pipeline_from_spec(mmf.preset(preset))
    req = _request(pipe, [data])
    contenders = {
        "pillow decode": Contender(lambda: baselines.floor_decode([data])),
        "decode_rgb (decode + array)": Contender(lambda: decode_rgb(data)),
        "pillow resize (image in, image out)": Contender(
            lambda: im.resize((tw, th), Image.Resampling.BICUBIC, reducing_gap=None)
        ),
        "resize_rgb (array in, array out)": Contender(lambda: resize_rgb(media.rgb, tw, th, "pil_bicubic")),
        "resize_rgb (lent Pillow image in, array out)": Contender(
            lambda: resize_rgb(media.rgb, tw, th, "pil_bicubic", source=im)),
        "decode with lent source + take_source": Contender(lambda: take_source(decode_rgb(data, keep_source=True))),
        "patchify_merged_blocks": Contender(
            lambda: patchify_merged_blocks(resized, s.patch_size, s.merge_size, s.temporal_patch_size, fam.images.norm)
        ),
        "process_item (resize + patchify)": Contender(lambda: fam.mm_process_item(media)),
        "mm_decode + mm_process_item (lent source)": Contender(lambda: fam.mm_process_item(fam.mm_decode(data, opts))),
        "pipeline.process (everything)": Contender(lambda: pipe.process(req)),
    }
    return {k: v * 1e3 for k, v in measure(contenders, passes, min_time).items()}


def stages_inkling(input_name: str, passes: int, min_time: float) -> dict[str, float]:
    """Median ms of each step of one inkling item (default spec), single-thread."""
    from inkling_plugin.family import InklingFamily
    from inkling_plugin.patchify import patchify
    from mm_framework.media.decode import decode_rgb, take_source
    from mm_framework.kernels import resize_rgb

    spec = {"family": "inkling"}
    fam = InklingFamily({})
    data = inputs()[input_name].images[0]
    media = decode_rgb(data)
    tw, th = baselines.inkling_target(spec)(media.width, media.height)
    resized = resize_rgb(media.rgb, tw, th, "pil_lanczos")
    im = baselines.floor_decode([data])[0]
    opts = fam.mm_decode_options()
    pipe = mmf.pipeline_from_spec(spec)
    req = _request(pipe, [data])
    contenders = {
        "pillow decode": Contender(lambda: baselines.floor_decode([data])),
        "decode with lent source + take_source": Contender(
            lambda: take_source(decode_rgb(data, opts, keep_source=True))
        ),
        "pillow LANCZOS resize (image in, image out)": Contender(
            lambda: im.resize((tw, th), Image.Resampling.LANCZOS, reducing_gap=None)),
        "resize_rgb (lent Pillow image in, array out)": Contender(
            lambda: resize_rgb(media.rgb, tw, th, "pil_lanczos", source=im)),
        "patchify (bf16 pair table)": Contender(lambda: patchify(resized, fam.patch_size)),
        "mm_decode + mm_process_item (lent source)": Contender(lambda: fam.mm_process_item(fam.mm_decode(data, opts))),
        "pipeline.process (everything)": Contender(lambda: pipe.process(req)),
    }
    return {k: v * 1e3 for k, v in measure(contenders, passes, min_time).items()}


# ---------------------------------------------------------------------------
# Memory probes (each in a fresh interpreter)
# ---------------------------------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def probe(job: dict[str, Any]) -> dict[str, Any]:
    """One request in this (fresh) process: peak RSS and tracemalloc peak against the output."""
    import tracemalloc

    _register_families()
    spec = job["spec"]
    # Inputs come as files: building them here would leave the generator's freed heap
    # resident, for the request to reuse unseen by the RSS measurement.
    datas = [Path(f).read_bytes() for f in job["files"]]
    if job["kind"] == "ours":
        pipe = mmf.pipeline_from_spec(spec)
        par.set_threads(job["threads"])
        req = _request(pipe, datas)

        def run() -> int:
            return int(sum(it.feature.array.nbytes for it in pipe.process(req).items))
    else:
        fn = baselines.hf_qwen(spec, job["kind"].removeprefix("hf_"))
        _torch_threads(1)

        def run() -> int:
            return int(fn(datas).nbytes)

    gc.collect()
    rss0 = _status_kib("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        reset = True
    except OSError:
        reset = False
    out_bytes = run()
    hwm = _status_kib("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    run()
    peak_traced = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return {
        "out_bytes": out_bytes, "rss_peak_bytes": (hwm - rss0) * 1024, "traced_peak_bytes": peak_traced,
        "hwm_reset": reset,
    }


def run_probe(job: dict[str, Any]) -> dict[str, Any]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, data in enumerate(inputs()[job["input"]].images):
            files.append(os.path.join(tmp, f"{i}.bin"))
            Path(files[-1]).write_bytes(data)
        job = {**job, "files": files}
        proc = subprocess.run(
            [sys.executable, __file__, "--probe", json.dumps(job)], capture_output=True, text=True, timeout=600
        )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def memory_jobs() -> list[dict[str, Any]]:
    jobs = []
    cores = os.cpu_count() or 1
    for preset, input_name in (
        ("qwen2_vl_class_defaults", "jpeg_1280x960"), ("qwen2_vl_class_defaults", "request_8_images"),
        ("qwen2_5_vl", "jpeg_4000x3000"),
    ):
        spec = mmf.preset(preset)
        for threads in ("inline", cores):
            jobs.append(
                {"label": f"ours {preset} pil", "kind": "ours", "spec": spec, "input": input_name, "threads": threads}
            )
        if baselines.hf_available("pil") is None:
            jobs.append(
                {"label": f"hf_pil {preset}", "kind": "hf_pil", "spec": spec, "input": input_name, "threads": 1}
            )
    if _inkling_plugin is not None:
        for input_name in ("jpeg_1280x960",):
            jobs.append({
                "label": "ours inkling", "kind": "ours", "spec": {"family": "inkling"}, "input": input_name,
                "threads": "inline",
            })
    return jobs


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def machine() -> dict[str, str]:
    info = {"python": platform.python_version(), "numpy": np.__version__, "pillow": Image.__version__}
    for mod in ("torch", "torchvision", "transformers"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = "not installed"
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        fields = dict(line.split(":", 1) for line in lscpu.splitlines() if ":" in line)
        info["cpu"] = fields.get("Model name", "?").strip()
        info["hypervisor"] = fields.get("Hypervisor vendor", "none").strip()
    except (OSError, subprocess.SubprocessError):
        info["cpu"] = platform.processor() or "?"
    info["cores"] = str(os.cpu_count())
    info["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    info["platform"] = platform.platform()
    info["kernels"] = f"native ({native.simd_level()})" if native.use_native() else "portable"
    info["mm_framework from"] = str(Path(mmf.__file__).parent)
    return info


def _fmt(x: float, nd: int = 1) -> str:
    return f"{x:.{nd}f}"


def report(rows: list[dict[str, Any]], scale: dict[str, dict[str, float]], stage: dict[str, dict[str, float]],
           mem: list[dict[str, Any]],
           info: dict[str, str], info_end: dict[str, str], command: str) -> str:
    out = ["## Machine", ""]
    out += [f"- {k}: {v}" for k, v in info.items() if k != "load_average"]
    out += [f"- load average at start / end: {info['load_average']} / {info_end['load_average']}", ""]
    out += ["## Command", "", "```", command, "```", ""]
    out += ["## Single-thread throughput (images/s; ratios are throughput ours/theirs and time ours/floor)", ""]
    out += ["| case | input | ours | HF PIL | ours/HF PIL | HF torchvision 1t | ours/HF tv | numpy | ours/numpy"
            " | decode | decode+resize | ours/floor |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s, n = r["single"], r["images"]
        ips = {k: n / v for k, v in s.items()}
        cell = lambda k: _fmt(ips[k]) if k in ips else "–"  # noqa: E731
        ratio = lambda k: f"{s[k] / s['ours']:.2f}×" if k in s else "–"  # noqa: E731
        out.append(
            f"| {r['case']} | {r['input']} | {cell('ours')} | {cell('hf_pil')} | {ratio('hf_pil')} | "
            f"{cell('hf_torchvision')} | {ratio('hf_torchvision')} | {cell('numpy')} | {ratio('numpy')} | "
            f"{cell('floor_decode')} | {cell('floor_decode_resize')} | {s['ours'] / s['floor_decode_resize']:.3f} |"
        )
    out += ["", "## The pool (images/s on a batch; latency of one request in ms)", ""]
    sizes = pool_sizes()
    head = ["case", "input", "batch", "inline img/s"] + [f"pool {p} img/s" for p in sizes]
    head += [f"pool {sizes[-1]} / inline"]
    head += ["latency inline ms"] + [f"latency pool {p} ms" for p in sizes] + [f"latency pool {sizes[-1]} / inline"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        p, n = r["pool"], r["images"] * r["copies"]
        lat_inline = p["lat_inline"]
        cells = [r["case"], r["input"], f"{r['images']}×{r['copies']}", _fmt(n / p["thr_inline"])]
        cells += [_fmt(n / p[f"thr_{q}"]) for q in sizes] + [f"{p['thr_inline'] / p[f'thr_{sizes[-1]}']:.2f}×"]
        cells += [_fmt(lat_inline * 1e3)] + [_fmt(p[f"lat_{q}"] * 1e3) for q in sizes]
        cells += [f"{p[f'lat_{sizes[-1]}'] / lat_inline:.2f}×"]
        out.append("| " + " | ".join(cells) + " |")
    if scale:
        out += ["", "## Thread scaling (images/s, 8 copies of jpeg_1280x960 per request, more passes)", ""]
        keys = list(next(iter(scale.values())))
        out += ["| case | " + " | ".join(keys) + f" | {keys[-1]} / inline |", "|---|" + "---|" * (len(keys) + 1)]
        for label, sc in scale.items():
            cells = " | ".join(_fmt(sc[k]) for k in keys)
            out.append(f"| {label} | {cells} | {sc[keys[-1]] / sc['inline']:.2f}× |")
    req = [r for r in rows if r["images"] > 1]
    if req:
        out += ["", "## The 8-image request (latency ms)", ""]
        pools = " | ".join(f"ours pool {q}" for q in sizes)
        out += [f"| case | ours inline | {pools} | HF PIL | HF tv 1t | HF tv all threads | numpy |",
                "|---|---|" + "---|" * len(sizes) + "---|---|---|---|"]
        for r in req:
            s, p = r["single"], r["pool"]
            ms = lambda d, k: _fmt(d[k] * 1e3) if k in d else "–"  # noqa: E731
            out.append(f"| {r['case']} | {ms(s, 'ours')} | " + " | ".join(ms(p, f'lat_{q}') for q in sizes)
                       + f" | {ms(s, 'hf_pil')} | {ms(s, 'hf_torchvision')} | {ms(p, 'hf_torchvision_all_threads')}"
                       + f" | {ms(s, 'numpy')} |")
    if stage:
        out += ["", "## Where the time goes (single thread, ms per image, medians)", ""]
        for title, st in stage.items():
            out += [f"{title}:", "", "| step | ms |", "|---|---|"]
            out += [f"| {k} | {v:.2f} |" for k, v in st.items()] + [""]
    if mem:
        out += ["", "## Peak memory per request (fresh process each; MB = 10^6 bytes)", ""]
        out += ["| who | input | threads | output MB | peak RSS above start MB | (RSS peak − output) / output"
                " | tracemalloc peak MB | (traced − output) / output |",
                "|---|---|---|---|---|---|---|---|"]
        for m in mem:
            if "error" in m:
                out.append(f"| {m['label']} | {m['input']} | {m['threads']} | error: {m['error']} |||||")
                continue
            o, rss, tr = m["out_bytes"], m["rss_peak_bytes"], m["traced_peak_bytes"]
            out.append(f"| {m['label']} | {m['input']} | {m['threads']} | {o / 1e6:.1f} | {rss / 1e6:.1f}"
                       f" | {(rss - o) / o:.2f} | "
                       f"{tr / 1e6:.1f} | {(tr - o) / o:.2f} |")
    skipped = sorted({f"{k}: {v}" for r in rows for k, v in r["skipped"].items()})
    if skipped:
        out += ["", "References not run: " + "; ".join(skipped)]
    out += ["", "## Inputs", "", "| input | sizes (w×h) | sha256[:16] of the encoded bytes |", "|---|---|---|"]
    seen = set()
    for r in rows:
        if r["input"] in seen:
            continue
        seen.add(r["input"])
        st = ", ".join(f"{w}×{h}" for w, h in r["sizes"])
        out.append(f"| {r['input']} | {st} | {r['digest']} |")
    return "\n".join(out) + "\n"


def targets(rows: list[dict[str, Any]], scale: dict[str, dict[str, float]], mem: list[dict[str, Any]]) -> str:
    """The issue's targets, each with the measured value and a verdict."""
    def row(case: str, inp: str) -> dict[str, Any] | None:
        return next((r for r in rows if r["case"] == case and r["input"] == inp), None)

    lines = ["| target | measured | met |", "|---|---|---|"]

    def add(what: str, value: float | None, ok: Callable[[float], bool], fmt: str = "{:.2f}×") -> None:
        if value is None:
            lines.append(f"| {what} | not measured | – |")
        else:
            lines.append(f"| {what} | {fmt.format(value)} | {'yes' if ok(value) else '**no**'} |")

    main = row("qwen_vl qwen2_vl pil", "jpeg_1280x960")
    if main:
        s = main["single"]
        add("1280×960 qwen2_vl class defaults, pil, 1 thread vs HF PIL (≥ 4.0×)",
            s["hf_pil"] / s["ours"] if "hf_pil" in s else None, lambda v: v >= 4.0)
        add("… vs HF torchvision processor, 1 thread (≥ 1.3×)",
            s["hf_torchvision"] / s["ours"] if "hf_torchvision" in s else None, lambda v: v >= 1.3)
        add("… time / Pillow decode + Pillow resize floor (≤ 0.6×)", s["ours"] / s["floor_decode_resize"],
            lambda v: v <= 0.6)
        add("… time / Pillow decode alone (≤ 3.0×)", s["ours"] / s["floor_decode"], lambda v: v <= 3.0)
    eight = row("qwen_vl qwen2_vl pil", "request_8_images")
    if eight:
        p = eight["pool"]
        add("8-image request, 2-thread throughput / 1 thread (≥ 1.8×)", p["thr_inline"] / p["thr_2"],
            lambda v: v >= 1.8)
    tv = row("qwen_vl qwen2_vl torchvision", "jpeg_1280x960")
    if tv and "hf_torchvision" in tv["single"]:
        add("backend=torchvision 1280×960, 1 thread vs HF torchvision 1 thread (≥ 1.3×)",
            tv["single"]["hf_torchvision"] / tv["single"]["ours"], lambda v: v >= 1.3)
    large = row("qwen_vl qwen2_5_vl pil", "jpeg_4000x3000")
    if large:
        add("4000×3000 qwen2_5_vl pil, latency 2 threads / 1 thread (≤ 0.6×)",
            large["pool"]["lat_2"] / large["pool"]["lat_inline"], lambda v: v <= 0.6)
    ink = row("inkling default", "jpeg_1280x960")
    if ink:
        s = ink["single"]
        add("inkling 1280×960 (LANCZOS to 2048×1536, bf16) time / decode + Pillow LANCZOS floor (≤ 0.6×)",
            s["ours"] / s["floor_decode_resize"], lambda v: v <= 0.6)
        add("inkling 1280×960 vs straightforward numpy (≥ 2×)", s["numpy"] / s["ours"], lambda v: v >= 2.0)
    for m in mem:
        if m.get("kind") == "ours" and "error" not in m and m["spec"].get("family") == "qwen_vl":
            v = (m["rss_peak_bytes"] - m["out_bytes"]) / m["out_bytes"]
            add(f"peak RSS above output / output, {m['input']} threads={m['threads']} (≤ 0.5×)", v, lambda v: v <= 0.5)
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5, help="interleaved passes per measurement (median taken)")
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per contender per pass")
    ap.add_argument("--quick", action="store_true", help="3 passes, no 12 MP references, no memory probes")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--only", help="substring filter on case labels")
    ap.add_argument("--scaling-only", action="store_true",
                    help="only the thread-scaling table (e.g. to compare malloc settings via the environment)")
    ap.add_argument("--markdown", help="also write the report to this file")
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        print(json.dumps(probe(json.loads(args.probe))))
        return
    if args.quick:
        args.passes = min(args.passes, 3)
    _register_families()
    command = " ".join([Path(sys.executable).as_posix(), *sys.argv])
    info = machine()
    print(json.dumps(info), flush=True)
    if args.scaling_only:
        env = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
        print(f"malloc environment: {env or 'glibc defaults'}")
        for case in cases(False):
            if case["label"] in ("qwen_vl qwen2_vl pil", "inkling default"):
                sc = scaling(case, "jpeg_1280x960", args.passes + 4, args.min_time)
                print(f"{case['label']}: " + ", ".join(f"{k} {v:.1f} img/s" for k, v in sc.items())
                      + f"; pool 2 / inline {sc['pool 2'] / sc['inline']:.2f}x")
        return
    rows = []
    for case in cases(args.quick):
        if args.only and args.only not in case["label"]:
            continue
        rows += run_case(case, args)
    scale = {}
    for case in cases(args.quick):
        wanted = not args.only or args.only in case["label"]
        if case["label"] in ("qwen_vl qwen2_vl pil", "inkling default") and wanted:
            scale[case["label"]] = scaling(case, "jpeg_1280x960", args.passes + 4, args.min_time)
            print(case["label"], "scaling", {k: round(v, 1) for k, v in scale[case["label"]].items()}, flush=True)
    stage = {}
    if not args.only or "qwen2_vl pil" in args.only:
        stage["qwen2_vl pil, jpeg_1280x960"] = stages_qwen(
            "qwen2_vl_class_defaults", "jpeg_1280x960", args.passes, args.min_time
        )
    if _inkling_plugin is not None and (not args.only or "inkling" in args.only):
        stage["inkling default, jpeg_1280x960"] = stages_inkling("jpeg_1280x960", args.passes, args.min_time)
    mem = []
    if not (args.quick or args.no_memory):
        for job in memory_jobs():
            res = run_probe(job)
            mem.append({**job, **res})
            print(json.dumps({k: v for k, v in mem[-1].items() if k != "spec"}), flush=True)
    text = report(rows, scale, stage, mem, info, machine(), command)
    text += "\n## Targets\n\n" + targets(rows, scale, mem)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
