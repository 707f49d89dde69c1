"""Replay of the chat front door's goldens (``golden/cases``, made from transformers by
``golden/generate_chat.py``) through ``mm_framework.Processor`` alone: for every case of every
chat test model, the rendered prompt, the ids and each model input's dtype, shape and sha256 (as
``assert_same`` compares them) equal the recorded ones. transformers is blocked while a golden
replays, so none of this reaches it (the model directories whose tokenizer transformers converts
from ranks are built with ``tokenizers`` alone, ``bpe_ranks.py``); the model directory, media and
request are each checked against the sha256 the generator recorded, so a replay runs on the
reference's very inputs, and templates that write the date see the generator's frozen clock."""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from .model_runs import GOLDEN, MODELS, comparable, file_hashes, frozen_clock, request_sha256

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

REPO = Path(__file__).parents[2]
REGENERATE = "regenerate with `python tests/chat/golden/generate_chat.py` (docs/chat.md, Goldens)"
def goldens() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(GOLDEN.glob("*.json"))}


@pytest.fixture
def without_transformers(monkeypatch):
    """``import transformers`` fails inside (a module imported before is hidden too)."""
    for name in [m for m in sys.modules if m == "transformers" or m.startswith("transformers.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError):
        importlib.import_module("transformers")


def test_every_model_has_a_golden():
    assert sorted(goldens()) == sorted(MODELS), REGENERATE


@pytest.mark.parametrize("name", sorted(goldens()))
def test_golden_template_is_the_test_data(name):
    """A changed template in tests/chat/data makes its model's golden stale."""
    recorded = goldens()[name]["template"]
    data = (REPO / recorded["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == recorded["sha256"], f"{recorded['file']} changed: {REGENERATE}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_chat_golden_replays(name, tmp_path, without_transformers):
    golden = goldens().get(name)
    assert golden is not None, f"no golden for {name}: {REGENERATE}"
    model = MODELS[name]
    root = model.make_dir(tmp_path / "model")
    assert file_hashes(root) == golden["model_dir"], f"the model directory is not the golden's: {REGENERATE}"
    media = tmp_path / "media"
    media.mkdir()
    cases = model.cases(media)
    assert file_hashes(media) == golden["media"], f"the media are not the golden's: {REGENERATE}"
    assert sorted(cases) == sorted(golden["cases"]), REGENERATE
    proc = mmf.Processor.from_model_dir(root)
    with frozen_clock(importlib.import_module("mm_framework.chat.template")):
        for label, case in cases.items():
            want = golden["cases"][label]
            assert request_sha256(case, media) == want["request_sha256"], (label, REGENERATE)
            assert proc.render(case.messages, **case.kwargs) == want["text"], label
            out = proc.apply_chat_template(case.messages, **{**case.kwargs, **case.ours})
            assert out.input_ids.tolist() == want["input_ids"], label
            if not out.items:
                assert want["inputs"] == {}, label
                continue
            assert sorted(want["inputs"]) == sorted(model.keys), label
            ours = out.model_kwargs()
            for key, recorded in want["inputs"].items():
                value = np.asarray(ours[key])
                assert list(value.shape) == recorded["shape"], (label, key, value.shape)
                got = comparable(value)
                assert str(got.dtype) == recorded["compared_as"], (label, key, value.dtype, recorded["dtype"])
                assert hashlib.sha256(got.tobytes()).hexdigest() == recorded["sha256"], (label, key)
                if "values" in recorded:
                    assert got.tolist() == recorded["values"], (label, key)
            counted = proc.count_tokens(case.messages, **{**case.kwargs, **case.ours})
            assert counted.input_ids.tolist() == want["input_ids"] and counted.offsets == out.offsets, label
