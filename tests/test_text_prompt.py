"""``expand_as_text``: a prompt whose items' expansions are text (``Capabilities.text_prompts``),
expanded before tokenizing; each item's span is the tokens wholly inside its text, found by the
tokenizer's character offsets (SmolVLM video through the pipeline: the smolvlm plugin's
test_smolvlm_video_prompt.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework.request import MmInput
from mm_framework.text_prompt import check_text_prompt, expand_as_text

CAPS = mmp.Capabilities(modalities=("image", "video"), placeholders={"image": 98, "video": 99},
                        placeholder_texts={"image": "<image>", "video": "<video>"}, text_prompts={"video"},
                        id_range=(0, 2000))


class Chars:
    """One token per character, ``<img>`` one special token (id 5), and ``":Y"`` merged into
    one token (id 1000): the merge a prompt's text makes with an expansion's first letter."""

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        ids, offsets = [], []
        for m in re.finditer(r"<img>|:Y|.", text, re.S):
            piece = m.group()
            ids.append({"<img>": 5, ":Y": 1000}[piece] if len(piece) > 1 else ord(piece))
            offsets.append(m.span())
        return ids, offsets


def _expand(text, modalities, texts, tokenize=None):
    inp = MmInput(videos=[b"x"] * modalities.count("video"), images=[b"x"] * modalities.count("image"), text=text)
    return expand_as_text(inp, Chars() if tokenize is None else tokenize, "toy", CAPS, modalities,
                          lambda k: texts[k])


def test_a_token_straddling_the_edge_is_the_prompts():
    out = _expand("look:<video> ok", ["video"], ["You<img><img>!"])
    assert out.input_ids.tolist() == [ord(c) for c in "look"] + [1000, ord("o"), ord("u"), 5, 5, ord("!"),
                                                                 *map(ord, " ok")]
    (start, end), = out.offsets
    assert (start, end) == (5, 9)  # "o" .. "!": ":Y" holds the prompt's colon


def test_each_placeholder_takes_its_own_items_text_in_order():
    out = _expand("a<video>b<video>c", ["video", "video"], ["<img>", "<img><img>"])
    assert out.input_ids.tolist() == [ord("a"), 5, ord("b"), 5, 5, ord("c")]
    assert out.offsets == ((1, 1), (3, 4))


def test_items_of_another_modality_need_their_text_too():
    with pytest.raises(mmf.UnsupportedError, match=r"item 0: family 'toy' writes no expansion text for image "
                                                   r"items, which a prompt expanded as text needs"):
        _expand("<image><video>", ["image", "video"], [None, "<img>"])
    out = _expand("<video> then <image>", ["image", "video"], ["[pic]", "<img>"])
    assert out.offsets == ((7, 11), (0, 0))  # item 0 (the image) is written second


def test_refusals():
    with pytest.raises(mmf.LayoutError, match=r"prompt text has 1 '<video>' placeholder\(s\) for 2 video item"):
        _expand("<video>", ["video", "video"], ["<img>", "<img>"])
    with pytest.raises(mmf.LayoutError, match=r"item 0: the tokenizer's character offsets place no run of tokens "
                                              r"inside its expansion text"):
        _expand("look:<video>", ["video"], ["Y"])  # merged whole into ":Y"
    with pytest.raises(mmf.InvalidInputError, match=r"input_ids\[1\] = 5000 is outside this family's id range"):
        _expand("a<video>", ["video"], ["\u1388"])
    with pytest.raises(mmf.InvalidInputError, match=r"tokenize gave 1 ids but character offsets of shape \(2,\)"):
        _expand("<video>", ["video"], ["<img>"], tokenize=type("Bad", (), {
            "encode_with_offsets": lambda self, text: ([5], [0, 5])})())
    with pytest.raises(mmf.InvalidInputError, match="tokenize failed: RuntimeError: down"):
        _expand("<video>", ["video"], ["<img>"], tokenize=type("Broken", (), {
            "encode_with_offsets": lambda self, text: (_ for _ in ()).throw(RuntimeError("down"))})())


def test_token_ids_are_refused_before_io():
    check_text_prompt(MmInput(images=[b"x"], input_ids=[98]), "toy", CAPS)  # no video: ids are fine
    with pytest.raises(mmf.UnsupportedError, match="item 1: a video's prompt is text in family 'toy'"):
        check_text_prompt(MmInput(images=[b"x"], videos=[b"x"], input_ids=[98, 99]), "toy", CAPS)


def test_text_prompts_need_a_text_placeholder():
    with pytest.raises(mmf.InternalError, match="text_prompts names 'video', which has no text placeholder"):
        mmp.Capabilities(modalities=("video",), placeholders={"video": 1}, text_prompts={"video"})


def test_ids_are_int64_and_offsets_checked():
    out = _expand("<video>", ["video"], ["<img>"])
    assert out.input_ids.dtype == np.int64 and out.offsets == ((0, 0),)
