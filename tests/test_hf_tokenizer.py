"""The tokenizer stand-in of ``mm_framework.hf`` (mm_framework/hf/tokenizer.py): a text with
runs of placeholder tokens gives the tokenizer's own values, whatever surrounds the runs."""

from __future__ import annotations

import random
import types
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from mm_framework import hf  # noqa: E402
from mm_framework.hf.tokenizer import AcceleratedTokenizer, placeholder_tokens  # noqa: E402

IMAGE, VIDEO = "<|image_pad|>", "<|video_pad|>"
PROCESSOR = types.SimpleNamespace(image_token=IMAGE, video_token=VIDEO)
CORPUS = ["hello world", "the image shows a cat", "é è naïve café", "<|image_pa", "d|>", "|>|><|", "\n\n  \t"]


def _fast(extra=(), normalizer=None):
    """A byte-level BPE tokenizer trained on CORPUS, with a BOS template, the two placeholders
    as special tokens and ``extra`` added tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.train_from_iterator(CORPUS * 4, trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "<pad>"],
                                                          initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in (IMAGE, VIDEO)])
    tok.add_tokens(list(extra))
    bos = [("<s>", tok.token_to_id("<s>"))]
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=bos)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", pad_token="<pad>")


@pytest.fixture(autouse=True)
def _fresh_stats():
    hf.reset_stats()
    yield
    hf.reset_stats()


def _same(want, got):
    assert list(want.keys()) == list(got.keys())
    for key in want.keys():
        a, b = want[key], got[key]
        assert type(a) is type(b), key
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), key
        else:
            assert a == b, key


def _texts(seed, n):
    rng = random.Random(seed)
    pieces = ["a", " ", "\n", "hello", "cat", "é", "<|", "|>", "<|image_pa", "d|>", "<s>", "  ", "x y"]
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.4:
                parts.append(rng.choice([IMAGE, VIDEO]) * rng.choice([1, 2, 3, 17, 400]))
            else:
                parts.append(rng.choice(pieces))
        yield "".join(parts)


def test_placeholders_of_a_fast_tokenizer_are_found():
    tok = _fast()
    assert placeholder_tokens(PROCESSOR, tok) == {IMAGE: tok.convert_tokens_to_ids(IMAGE),
                                                  VIDEO: tok.convert_tokens_to_ids(VIDEO)}


@pytest.mark.parametrize("kwargs", [{}, {"return_tensors": "np"}, {"add_special_tokens": False},
                                    {"padding": True, "truncation": False, "return_tensors": "np"},
                                    {"return_token_type_ids": True, "return_special_tokens_mask": True},
                                    {"padding": False, "padding_side": "left", "return_attention_mask": False}])
def test_runs_give_the_tokenizers_own_values(kwargs):
    tok = _fast()
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    served = 0
    for text in _texts(0, 60):
        for arg in (text, [text]):
            _same(tok(arg, **kwargs), fast(arg, **kwargs))
            served += (IMAGE * 2 in text or VIDEO * 2 in text)
    assert served > 20
    assert hf.stats() == {"served": {"TokenizersBackend": served}, "fallbacks": {}}


def test_torch_tensors_are_widened_too():
    torch = pytest.importorskip("torch")
    tok = _fast()
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    text = f"a{IMAGE * 50}b {VIDEO * 3}\n"
    want, got = tok([text], return_tensors="pt"), fast([text], return_tensors="pt")
    for key in want.keys():
        assert got[key].dtype == want[key].dtype and torch.equal(got[key], want[key])


def test_a_served_output_has_no_encodings_and_a_text_without_runs_is_the_tokenizers_own_call():
    tok = _fast()
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    assert fast(f"a{IMAGE * 3}").encodings is None
    single = fast(f"a{IMAGE}b{VIDEO}")
    assert single.encodings is not None and single["input_ids"] == tok(f"a{IMAGE}b{VIDEO}")["input_ids"]
    assert hf.stats() == {"served": {"TokenizersBackend": 1}, "fallbacks": {}}


@pytest.mark.parametrize("args, kwargs, reason", [
    ((["a", "b"],), {}, "more than one text"),
    (([],), {"padding": "max_length", "max_length": 900}, "padding 'max_length'"),
    (([],), {"truncation": True}, "option truncation=True"),
    (([],), {"max_length": 10}, "option max_length=10"),
    (([],), {"return_offsets_mapping": True}, "option return_offsets_mapping=True"),
    (([],), {"return_length": True}, "option return_length=True"),
    (([],), {"pad_to_multiple_of": 8, "padding": True}, "option pad_to_multiple_of=8"),
    (([],), {"something_new": 1}, "option 'something_new'"),
    (("pair",), {}, "positional arguments after text"),
])
def test_what_is_not_served_goes_to_the_tokenizer_counted(args, kwargs, reason):
    tok = _fast()
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    text = f"hi {IMAGE * 30} there"
    if args and args[0] == ["a", "b"]:
        call = ([text, text],)
    elif args == ("pair",):
        call = (text, "second")
    else:
        call = (text,)
    want = tok(*call, **kwargs)
    got = fast(*call, **kwargs)
    assert got.encodings is not None
    _same(want, got)
    assert hf.stats() == {"served": {}, "fallbacks": {f"TokenizersBackend: {reason}": 1}}


def test_tokens_that_eat_whitespace_overlap_or_are_normalized_are_not_cut():
    from tokenizers import AddedToken

    assert placeholder_tokens(PROCESSOR, _fast([AddedToken("<|image", special=False)])) == {
        VIDEO: _fast([AddedToken("<|image", special=False)]).convert_tokens_to_ids(VIDEO)}
    assert IMAGE not in placeholder_tokens(PROCESSOR, _fast([AddedToken("pad|><", special=False)]))
    assert IMAGE not in placeholder_tokens(PROCESSOR, _fast([AddedToken(IMAGE + IMAGE, special=False)]))
    lstrip = types.SimpleNamespace(image_token="<img>")
    assert placeholder_tokens(lstrip, _fast([AddedToken("<img>", lstrip=True)])) == {}
    normalized = types.SimpleNamespace(image_token="<img>")
    assert placeholder_tokens(normalized, _fast([AddedToken("<img>", normalized=True)])) == {}
    split = _fast()
    split.split_special_tokens = True
    assert placeholder_tokens(PROCESSOR, split) == {}
    assert placeholder_tokens(PROCESSOR, types.SimpleNamespace(is_fast=False)) == {}


def test_an_overlapping_token_left_in_the_tokenizer_still_gives_its_values():
    """A token the eligibility rule drops is not cut; the others still are, exactly."""
    from tokenizers import AddedToken

    tok = _fast([AddedToken("pad|><|video", special=False)])
    tokens = placeholder_tokens(PROCESSOR, tok)
    assert tokens == {}
    tok = _fast([AddedToken("image_pad|>!", special=False)])
    tokens = placeholder_tokens(PROCESSOR, tok)
    assert list(tokens) == [VIDEO]
    fast = AcceleratedTokenizer(tok, tokens)
    for text in list(_texts(1, 40)) + [f"{IMAGE * 3}!{VIDEO * 4}!", f"{IMAGE}!{IMAGE * 2}"]:
        _same(tok(text), fast(text))


def test_one_stand_in_serves_threads():
    tok = _fast()
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    texts = list(_texts(2, 24))
    want = [tok(t, return_tensors="np") for t in texts]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda t: fast(t, return_tensors="np"), texts * 4))
    for w, g in zip(want * 4, got):
        _same(w, g)


def test_settings_reach_the_tokenizer_and_a_changed_tokenizer_is_not_cut():
    from tokenizers import AddedToken

    tok = _fast()
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    fast.padding_side = "left"
    assert tok.padding_side == "left" and fast.padding_side == "left"
    text = f"a{IMAGE * 9}b"
    tok.add_tokens([AddedToken("pad|>b", special=False)])  # now overlaps the placeholder
    _same(tok(text), fast(text))
    tok.split_special_tokens = True
    _same(tok(text), fast(text))
    reason = "TokenizersBackend: added tokens or split_special_tokens changed since accelerate"
    assert hf.stats() == {"served": {}, "fallbacks": {reason: 2}}



def test_ids_that_do_not_come_back_one_per_run_go_to_the_tokenizer():
    """A token map the qualification rule would refuse (an added token that begins before the
    placeholder and swallows it): the check on the cut text's ids sends the call back."""
    from tokenizers import AddedToken

    tok = _fast([AddedToken("x" + IMAGE, special=True, normalized=False)])
    fast = AcceleratedTokenizer(tok, {IMAGE: tok.convert_tokens_to_ids(IMAGE)})
    text = "x" + IMAGE * 3
    got = fast(text)
    assert got.encodings is not None
    _same(tok(text), got)
    reason = "TokenizersBackend: the cut text's ids do not hold one placeholder per run"
    assert hf.stats() == {"served": {}, "fallbacks": {reason: 1}}


def test_an_output_not_known_to_be_per_token_goes_to_the_tokenizer():
    tok = _fast()

    class WithLength(type(tok)):
        def __call__(self, *args, **kwargs):
            out = super().__call__(*args, **kwargs)
            out["length"] = [len(out["input_ids"])]
            return out

    tok.__class__ = WithLength
    fast = AcceleratedTokenizer(tok, placeholder_tokens(PROCESSOR, tok))
    text = f"a{IMAGE * 4}"
    got = fast(text)
    assert got["length"] == [6] and got.encodings is not None
    _same(tok(text), got)
    assert hf.stats() == {"served": {}, "fallbacks": {"TokenizersBackend: outputs ['length']": 1}}
