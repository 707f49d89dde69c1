"""Live parity of every chat test model (``tests/chat/models``) with its transformers processor:
for each case, the rendered prompt equals ``apply_chat_template(tokenize=False)``, and the ids
and every model input in ``model.keys`` equal ``apply_chat_template(tokenize=True,
return_dict=True, return_tensors="np")`` byte for byte, on each image backend the model lists
(the torchvision one only where torchvision is installed), and, for a model with a
``positions_reference`` whose requirements are installed, the positions equal the reference's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from .model_runs import MODELS, assert_same, reference_inputs, theirs_kwargs

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")
pytest.importorskip("transformers")


def _params():
    for model in MODELS.values():
        for backend in model.backends:
            yield pytest.param(model.name, backend, id=f"{model.name}-{backend}")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            cache[name] = MODELS[name].make_dir(tmp_path_factory.mktemp(name) / "model")
        return cache[name]

    return get


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    return tmp_path_factory.mktemp("chat-media")


@pytest.mark.parametrize(("name", "backend"), list(_params()))
def test_chat_model_equals_transformers(name, backend, built, media):
    model = MODELS[name]
    if backend == "torchvision":
        pytest.importorskip("torchvision")
    root = built(name)
    # PIL is every family's default backend; another one is the spec's "backend" choice.
    proc = mmf.Processor.from_model_dir(root, spec_overrides={} if backend == "pil" else {"backend": backend})
    ref = model.reference(root, backend)
    cases = model.cases(media)
    assert cases, "a chat model without cases proves nothing"
    positions = model.positions_reference(root) if model.positions_reference else None
    for label, case in cases.items():
        text = proc.render(case.messages, **case.kwargs)
        assert text == ref.apply_chat_template(case.messages, tokenize=False, **theirs_kwargs(case)), label
        ids, theirs = reference_inputs(ref, case, model.keys)
        out = proc.apply_chat_template(case.messages, **{**case.kwargs, **case.ours})
        assert out.input_ids.tolist() == ids.tolist(), label
        if positions is not None:
            want, delta = positions(out)
            np.testing.assert_array_equal(out.positions.positions, want, err_msg=label)
            assert out.positions.delta == delta, label
        if not out.items:
            continue
        ours = out.model_kwargs()
        assert set(theirs) == set(model.keys), (label, sorted(theirs))
        for key in model.keys:
            assert_same(np.asarray(ours[key]), theirs[key], (label, key))
        counted = proc.count_tokens(case.messages, **{**case.kwargs, **case.ours})
        assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets, label
