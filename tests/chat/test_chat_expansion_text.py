"""A family that expands in text (``mm_expansion_text``, gemma3): every entry point gives the ids
of the prompt tokenized with the placeholders replaced, as the processor does (the live parity
of those ids is test_chat_models.py), a spec whose expansion ids the tokenizer does not make
is refused, and a family giving expansion text for some items only is an InternalError."""

from __future__ import annotations

import asyncio

import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import plugins

from .models import gemma3

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return gemma3.make_dir(tmp_path_factory.mktemp("gemma3") / "model")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return gemma3.cases(tmp_path_factory.mktemp("media"))["pan_and_scan_between"]


def test_every_entry_point_tokenizes_the_expansion_text(root, case):
    proc = mmf.Processor.from_model_dir(root)
    kw = {**case.kwargs, **case.ours}
    out = proc.apply_chat_template(case.messages, **kw)
    glued = proc.tokenizer.encode(":Here")[-1:]
    assert glued.tolist() == [gemma3._vocab_and_merges()[0][":Here"]]
    assert glued[0] in out.input_ids  # the text before the image met pan-and-scan's prose
    for other in (asyncio.run(proc.apply_chat_template_async(case.messages, **kw)),
                  proc.apply_chat_template_many([case.messages], **kw)[0]):
        assert other == out
    counted = proc.count_tokens(case.messages, **kw)
    assert counted.input_ids.tolist() == out.input_ids.tolist() and counted.offsets == out.offsets
    for it, (start, end) in zip(out.items, out.offsets):
        assert out.input_ids[start] == 262144 and out.input_ids[end] == 262144


def test_expansion_ids_the_tokenizer_does_not_make_are_refused(root, case):
    proc = mmf.Processor.from_model_dir(root, spec_overrides={"pan_and_scan_crops_ids": [5]})
    with pytest.raises(mmf.LayoutError, match="the prompt's image or video 0: its 1039 tokens do not occur in the "
                                              "prompt tokenized as the model's processor tokenizes it"):
        proc.apply_chat_template(case.messages, **{**case.kwargs, **case.ours})


@pytest.fixture
def partial_text_family():
    """``gemma3_partial_text``: Gemma 3 that writes its expansion text only for images with
    pan-and-scan crops, a family breaking the hook's every-item-or-none contract."""
    family = pytest.importorskip("gemma3_plugin").Gemma3Family

    class PartialText(family):
        @mmp.hookimpl
        def mm_resolved_spec(self):
            return {**self.spec.to_dict(), "family": "gemma3_partial_text"}

        @mmp.hookimpl
        def mm_expansion_text(self, geometry):
            return super().mm_expansion_text(geometry) if geometry.n > 1 else None

    class Register:
        @mmp.hookimpl
        def mm_register_families(self, register):
            register("gemma3_partial_text", PartialText)

    name = plugins.register(Register(), name="gemma3-partial-text")
    try:
        yield "gemma3_partial_text"
    finally:
        plugins.unregister(name)


def test_expansion_text_for_some_items_only_is_an_internal_error(root, case, partial_text_family):
    # The case's small image gets no crops, its wide one does: two items with text, one without.
    proc = mmf.Processor.from_model_dir(root, spec_overrides={"family": partial_text_family})
    with pytest.raises(mmf.InternalError, match=r"^family 'gemma3_partial_text': mm_expansion_text gave text for "
                                                r"some items only$"):
        proc.apply_chat_template(case.messages, **{**case.kwargs, **case.ours})
