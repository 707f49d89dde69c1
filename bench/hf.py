"""The transformers adapter's benchmark (issue 27): ``mm_framework.hf.accelerate`` on a Qwen-VL
image processor against the same processor unaccelerated.

Usage (a venv with the repository and the qwen_vl plugin, ``transformers==5.24.0``; add
``torch==2.14.1 torchvision==0.29.1`` for the torchvision backend)::

    taskset -c 1 python bench/hf.py

1280x960 JPEGs (bench/inputs.py) decoded to ``PIL.Image`` before timing, as vLLM hands them
over; Qwen2-VL's class-default image processor (``Qwen2VLImageProcessorPil`` and, where
torchvision imports, ``Qwen2VLImageProcessor``); ``return_tensors="pt"`` where torch imports,
else ``"np"``; one thread on both sides (``MM_FRAMEWORK_THREADS=inline``,
``torch.set_num_threads(1)``). Outputs are compared byte for byte before anything is timed;
contenders interleave over passes; medians are reported. Targets: at least 4x the PIL
processor and 1.3x the torchvision one. Also ``do_rescale=False, do_normalize=False`` (the
uint8 patches vLLM's ``mm_device_do_normalize`` asks for).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import sys
from pathlib import Path

os.environ.setdefault("MM_FRAMEWORK_THREADS", "inline")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import numpy as np  # noqa: E402
import transformers  # noqa: E402
from PIL import Image  # noqa: E402

from mm_framework import hf  # noqa: E402

from inputs import inputs  # noqa: E402
from serving import interleaved  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None
BACKENDS = {"pil": "Qwen2VLImageProcessorPil"}
if importlib.util.find_spec("torchvision") is not None:
    BACKENDS["torchvision"] = "Qwen2VLImageProcessor"


def _same(a, b) -> None:
    assert list(a.keys()) == list(b.keys())
    for k in a:
        x, y = a[k], b[k]
        assert type(x) is type(y) and x.dtype == y.dtype and tuple(x.shape) == tuple(y.shape), k
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=1.0)
    args = parser.parse_args()
    if HAS_TORCH:
        import torch

        torch.set_num_threads(1)
    data = inputs()["jpeg_1280x960"].images[0]
    image = Image.open(io.BytesIO(data))
    image.load()
    tensors = "pt" if HAS_TORCH else "np"
    print(f"transformers {transformers.__version__}, return_tensors={tensors!r}, one 1280x960 JPEG as PIL.Image")
    for backend, name in BACKENDS.items():
        cls = getattr(transformers, name)
        ref, acc = cls(), hf.accelerate(cls(), strict=True)
        for label, call in (("f32", {}), ("u8", {"do_rescale": False, "do_normalize": False})):
            kwargs = {"images": [image], "return_tensors": tensors, **call}
            _same(ref(**kwargs), acc(**kwargs))
            ms = interleaved({"transformers": lambda: ref(**kwargs), "accelerated": lambda: acc(**kwargs)},
                             args.passes, args.min_time)
            print(f"{name} {label}: transformers {ms['transformers']:.2f} ms, accelerated {ms['accelerated']:.2f} ms, "
                  f"{ms['transformers'] / ms['accelerated']:.2f}x")
    fallbacks = hf.stats()["fallbacks"]
    assert not fallbacks, fallbacks


if __name__ == "__main__":
    main()
