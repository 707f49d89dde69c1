"""What fresh memory costs one qwen2_vl request (1280x960 JPEG, class defaults, 1 thread).

Usage (a venv with the repository installed)::

    python bench/fresh_memory.py
    MALLOC_TRIM_THRESHOLD_=2000000000 MALLOC_MMAP_THRESHOLD_=2000000000 python bench/fresh_memory.py

The request returns 23 MB of float32 ``pixel_values`` that the caller owns, so they are
written to memory the process has not touched before whenever glibc hands large blocks
back to the kernel between requests (its default for blocks above its mmap threshold).
This prints the patchify kernel writing into reused memory and into fresh memory, a bare
first touch of 23 MB, and a whole request; run it twice (as above) to see the share of a
request that is page faults rather than computation.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MM_FRAMEWORK_THREADS", "inline")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

import mm_framework as mmf  # noqa: E402
from mm_framework.kernels import kernel_mode, patchify_merged_blocks, resize_rgb  # noqa: E402
from qwen_vl_plugin import QwenVlFamily  # noqa: E402

from inputs import inputs  # noqa: E402


def median_ms(fn, n: int = 30) -> float:
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[n // 2] * 1000


def main() -> None:
    data = inputs()["jpeg_1280x960"].images[0]
    spec = mmf.preset("qwen2_vl_class_defaults")
    pipe = mmf.pipeline_from_spec(spec)
    fam = QwenVlFamily({k: v for k, v in spec.items() if k != "family"})
    _, (media,) = pipe.decode(mmf.MmInput(images=[data]))
    resized = resize_rgb(media.rgb, 1148, 840, "pil_bicubic")
    shape = (1148 * 840 // 196, 1176)
    out = np.empty(shape, np.float32)
    kept: list[np.ndarray] = []
    inp = mmf.MmInput(images=[data], input_ids=[151655])
    print(f"kernels {kernel_mode()}; malloc env: "
          f"{ {k: v for k, v in os.environ.items() if k.startswith('MALLOC_')} or 'glibc defaults'}")
    reused = median_ms(lambda: patchify_merged_blocks(resized, 14, 2, 2, fam.images.norm, out=out))
    print(f"patchify into reused memory      {reused:6.2f} ms")
    fresh = median_ms(lambda: kept.append(patchify_merged_blocks(resized, 14, 2, 2, fam.images.norm)), 10)
    print(f"patchify into fresh memory       {fresh:6.2f} ms")
    kept.clear()
    print(f"first touch of 23 MB (np.ones)   {median_ms(lambda: kept.append(np.ones(shape, np.float32)), 10):6.2f} ms")
    kept.clear()
    print(f"whole request (pipeline.process) {median_ms(lambda: pipe.process(inp), 40):6.2f} ms")


if __name__ == "__main__":
    main()
