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


def _offsets_changed(change):
    """:class:`Chars` with its ``(ids, offsets)`` passed through ``change`` first."""
    return type("Changed", (), {"encode_with_offsets": lambda self, text: change(*Chars().encode_with_offsets(text))})()


# "ab<video>cd" with the video's text "<img><img>": ids a b <img> <img> c d, offsets (0,1) (1,2) (2,7) (7,12) ...
@pytest.mark.parametrize(("change", "message"), [
    (lambda ids, offs: (ids, offs[::-1]),
     r"tokenize gave token 1 the character offsets \(12, 13\), before token 0's \(13, 14\): a token's characters "
     r"must not come before those of the tokens ahead of it"),
    (lambda ids, offs: (ids, [offs[0], offs[1], offs[3], offs[2], *offs[4:]]), r"token 3 the character offsets "
     r"\(2, 7\), before token 2's \(7, 12\)"),
    (lambda ids, offs: (ids, [(a + 2, b + 2) for a, b in offs]),
     r"tokenize gave token 4 the character offsets \(14, 15\), which are not 0 <= start <= end <= 14 \(the expanded "
     r"prompt's length\)"),
    (lambda ids, offs: (ids, [(a - 1, b - 1) for a, b in offs]), r"token 0 the character offsets \(-1, 0\), which"),
    (lambda ids, offs: (ids, [(b, a) for a, b in offs]), r"token 0 the character offsets \(1, 0\), which are not"),
    (lambda ids, offs: (ids, np.array([(0, 2**63 + 5)] * len(offs), dtype=np.uint64)),
     r"token 0 the character offsets \(0, 9223372036854775813\), which"),  # not wrapped to a negative int64
    (lambda ids, offs: (ids, [offs[0], (1,), *offs[2:]]),
     r"tokenize gave character offsets that make no array \(pairs of unequal lengths\?\); expected \(6, 2\) integers"),
    (lambda ids, offs: (ids, offs[:-1]), r"tokenize gave 6 ids but character offsets of shape \(5, 2\) \(int64\)"),
    (lambda ids, offs: (ids, [(a + 0.5, b) for a, b in offs]), r"character offsets of shape \(6, 2\) \(float64\)"),
    (lambda ids, offs: (ids, [(str(a), str(b)) for a, b in offs]), r"character offsets of shape \(6, 2\) \(<U2\)"),
    (lambda ids, offs: ids, r"tokenize failed: ValueError: too many values to unpack"),
], ids=["going back", "two swapped", "past the end", "negative", "ending before they start", "uint64 above int64",
        "ragged", "one pair short", "float", "strings", "no offsets returned"])
def test_malformed_offsets_are_refused(change, message):
    with pytest.raises(mmf.InvalidInputError, match=message) as err:
        _expand("ab<video>cd", ["video"], ["<img><img>"], tokenize=_offsets_changed(change))
    assert err.value.item is None  # the tokenizer's fault, the whole prompt's


def test_zero_width_tokens_may_sit_anywhere():
    """A post-processor's special tokens hold no characters, at (0, 0), even after the text."""
    out = _expand("ab<video>", ["video"], ["<img>"], tokenize=_offsets_changed(
        lambda ids, offs: ([1, *ids, 2], [(0, 0), *offs, (0, 0)])))
    assert out.input_ids.tolist() == [1, ord("a"), ord("b"), 5, 2] and out.offsets == ((3, 3),)


def test_no_tokens_is_the_items_error():
    with pytest.raises(mmf.LayoutError, match=r"item 0: the tokenizer's character offsets place no run of tokens"):
        _expand("<video>", ["video"], ["<img>"], tokenize=_offsets_changed(lambda ids, offs: ([], [])))
