"""Prompt ids: given ids, or the text through every tokenizer form an engine holds."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp

from .conftest import png_bytes

IMG = png_bytes(8, 8)
IDS = [5, 1, 6]


class BatchEncodingLike(dict):
    """What HF tokenizers return from __call__: a mapping that also has attributes."""

    def __getattr__(self, name):
        return self[name]


class HfLike:
    def __call__(self, text):
        return BatchEncodingLike(input_ids=IDS, attention_mask=[1, 1, 1])

    def encode(self, text):
        return list(IDS)


class TiktokenLike:
    def encode(self, text):
        return np.asarray(IDS, dtype=np.int32)


@pytest.mark.parametrize(
    "tokenize",
    [lambda t: IDS, lambda t: np.asarray(IDS, np.uint32), lambda t: {"input_ids": IDS},
     lambda t: BatchEncodingLike(input_ids=IDS), HfLike(), TiktokenLike()],
    ids=["list", "array", "mapping", "batch-encoding", "hf-tokenizer", "tiktoken"],
)
def test_tokenizer_forms(toy_pipe, tokenize):
    out = toy_pipe.process(mmf.MmInput(images=[IMG], text="hi <image>"), tokenize=tokenize)
    assert out.input_ids.tolist() == [5, 1, 1, 1, 1, 6]


@pytest.mark.parametrize(
    "tokenize, match",
    [(lambda t: [[5, 1, 6]], r"tokenize result \(list\) must be a 1-D sequence of integers, got int64 \(1, 3\)"),
     (lambda t: "5 1 6", r"tokenize result \(str\) must be a 1-D sequence of integers"),
     (lambda t: [5.0, 1.0], r"tokenize result \(list\) must be a 1-D sequence of integers, got float64"),
     (lambda t: {"ids": IDS}, r"tokenize returned a dict without 'input_ids' \(keys: \['ids'\]\)"),
     (lambda t: [[5], [1, 6]], r"tokenize result \(list\) must be a 1-D sequence of integers"),
     (object(), "tokenize must be a callable or have an encode\\(text\\) method, got object"),
     (lambda t: 1 / 0, "tokenize failed: ZeroDivisionError")],
)
def test_bad_tokenizer_results_say_what_was_received(toy_pipe, tokenize, match):
    with pytest.raises(mmf.InvalidInputError, match=match):
        toy_pipe.process(mmf.MmInput(images=[IMG], text="hi"), tokenize=tokenize)


def test_placeholder_mismatch_names_the_id_it_looked_for(toy_pipe):
    match = r"prompt has 0 media placeholder\(s\) but 1 media item\(s\) \(placeholder id 1\)"
    with pytest.raises(mmf.LayoutError, match=match):
        toy_pipe.process(mmf.MmInput(images=[IMG], input_ids=[5, 6]))


# --- default prompts and placeholder texts ---------------------------------------------------

def named_toy(text="<img>"):
    """The toy family naming its placeholder 1 and that placeholder's text."""
    return mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1, "placeholder_text": text})


def test_no_text_and_no_ids_is_one_placeholder_per_item(toy):
    pipe = named_toy()
    out = pipe.process(mmf.MmInput(images=[IMG, IMG]))
    assert out.input_ids.tolist() == pipe.process(mmf.MmInput(images=[IMG, IMG], input_ids=[1, 1])).input_ids.tolist()
    assert pipe.count_tokens(mmf.MmInput(images=[IMG])).input_ids.tolist() == [1, 1, 1, 1]


def test_no_prompt_for_a_family_without_placeholders_names_family_and_modality(toy):
    unnamed = mmf.pipeline_from_spec({"family": "toy", "image_token_id": 1, "unnamed": True})
    with pytest.raises(mmf.InvalidInputError,
                       match="family 'toy' names no image placeholder to build a default prompt"):
        # Refused before any I/O: the source is never fetched.
        unnamed.process(mmf.MmInput(images=["https://unreachable.invalid/x.png"]))


def test_text_whose_placeholder_the_tokenizer_split_says_so(toy):
    pipe = named_toy()
    by_char = lambda text: [100 + ord(c) % 50 for c in text]  # noqa: E731 - knows no special token
    with pytest.raises(mmf.LayoutError) as e:
        pipe.process(mmf.MmInput(images=[IMG], text="look: <img>"), tokenize=by_char)
    assert str(e.value) == (
        "prompt has 0 image placeholder(s) for 1 image item(s): the text holds '<img>' but the tokenizer did not "
        "map it to id 1: the tokenizer lacks the model's special tokens"
    )
    # Any other mismatch keeps the layout's own message.
    with pytest.raises(mmf.LayoutError, match=r"prompt has 0 media placeholder\(s\) but 1 media item\(s\)"):
        pipe.process(mmf.MmInput(images=[IMG], text="no marker"), tokenize=by_char)
    with pytest.raises(mmf.LayoutError, match=r"prompt has 0 media placeholder\(s\) but 1 media item\(s\)"):
        pipe.process(mmf.MmInput(images=[IMG], input_ids=by_char("look: <img>"), text="look: <img>"))


@pytest.mark.parametrize("texts, match", [
    ({"video": "<v>"}, "placeholder_texts names 'video', which has no placeholder id"),
    ({"image": ""}, r"placeholder_texts\['image'\] must be a non-empty str, got ''"),
    ({"image": 5}, r"placeholder_texts\['image'\] must be a non-empty str, got 5"),
])
def test_capabilities_check_placeholder_texts(texts, match):
    with pytest.raises(mmf.InternalError, match=match):
        mmp.Capabilities(placeholders={"image": 1}, placeholder_texts=texts)
