"""What the live chat parity runner (``test_chat_models.py``), the golden generator
(``golden/generate_chat.py``) and the golden replay (``test_chat_golden.py``) share: the chat test
models, the reference's keywords and outputs, and how one model input is compared. Nothing here
imports transformers; ``reference_inputs`` is handed the reference processor."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import importlib
import json
import pkgutil
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from . import models as models_pkg

GOLDEN = Path(__file__).parent / "golden" / "cases"

MODELS = {
    m.name: m
    for info in pkgutil.iter_modules(models_pkg.__path__)
    for m in importlib.import_module(f"{models_pkg.__name__}.{info.name}").MODELS
}


def reference_inputs(ref, case, names):
    """transformers' ids and model inputs for ``case``, as numpy (bf16 as its bits)."""
    out = ref.apply_chat_template(case.messages, tokenize=True, return_dict=True, return_tensors="np",
                                  **theirs_kwargs(case))
    return np.asarray(out["input_ids"])[0], {k: np.asarray(out[k]) for k in names if k in out}


def theirs_kwargs(case):
    """The reference's keywords, copied: transformers adds to the ``processor_kwargs`` it is given."""
    return copy.deepcopy({**case.kwargs, **case.theirs})


def assert_same(a, b, what):
    """Equal shapes and bytes; integer arrays compared as int64 (transformers' grids are int64,
    some masks int32), transformers' float64 outputs as the float32 the model is given."""
    assert a.shape == b.shape, (what, a.shape, b.shape)
    if a.dtype != b.dtype:
        kinds = {a.dtype.kind, b.dtype.kind}
        assert kinds <= {"i", "u", "b"} or kinds == {"f"}, (what, a.dtype, b.dtype)
        a, b = comparable(a), comparable(b)
    assert a.tobytes() == b.tobytes(), what


def comparable(a: np.ndarray) -> np.ndarray:
    """``a`` as ``assert_same`` compares arrays of different dtypes: integers and booleans as
    int64, floats as float32, C-contiguous. Any other kind is refused."""
    if a.dtype.kind in "iub":
        return np.ascontiguousarray(a, dtype=np.int64)
    if a.dtype.kind == "f":
        return np.ascontiguousarray(a, dtype=np.float32)
    raise TypeError(f"no comparison rule for dtype {a.dtype}")


# The day templates see through ``strftime_now`` in the goldens (Mistral Small 3.1's default
# system prompt writes it): a golden made on one day must replay on any other.
FROZEN_NOW = datetime(2025, 3, 17, 12, 0, 0)


@contextlib.contextmanager
def frozen_clock(module: Any) -> Iterator[None]:
    """``module.datetime.now()`` is ``FROZEN_NOW`` inside (both renderers' ``strftime_now`` call
    their module's ``datetime.now()``)."""

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):
            return FROZEN_NOW

    saved = module.datetime
    module.datetime = Frozen
    try:
        yield
    finally:
        module.datetime = saved


def file_hashes(root: Path) -> dict[str, str]:
    """The sha256 of every file under ``root``, by its path relative to ``root``."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def request_sha256(case: Any, media: Path) -> str:
    """The sha256 of a case's request (messages and keywords for both sides), with the directory
    its media were written to spelt ``<media>``, so the same request hashes the same anywhere."""

    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return {"sha256": hashlib.sha256(value).hexdigest()}
        raise TypeError(f"a chat case holds a {type(value).__name__}: give the golden request a rule for it")

    doc = {"messages": case.messages, "kwargs": case.kwargs, "ours": case.ours, "theirs": case.theirs}
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=plain).replace(str(media), "<media>")
    return hashlib.sha256(text.encode()).hexdigest()
