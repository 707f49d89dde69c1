"""A stand-in for a processor's tokenizer that tokenizes each run of a repeated placeholder
token as one token and widens the ids back (docs/engines.md, "Placeholder runs").

The text a transformers processor tokenizes holds one placeholder token per image feature:
a 1280x960 image is 1564 ``<|image_pad|>`` for PaddleOCR-VL and about 7300 ``<image>`` for
LLaVA-OneVision, and tokenizing them is most of the processor's text time. A fast tokenizer
(``tokenizers``) first cuts the raw text at its added tokens, then tokenizes each piece
between them on its own; a placeholder ``T`` that is an added token matched on the raw text
(``normalized=False``), eats no whitespace (``lstrip``, ``rstrip``, ``single_word`` off) and
overlaps no other added token becomes one id wherever it stands, so ``T`` repeated ``k``
times tokenizes to that id ``k`` times with the same pieces around it. The stand-in therefore
tokenizes the text with each run cut to one ``T`` and repeats each placeholder's entries of
every per-token output ``k`` times: the same values as the original call.

It serves one text per call with nothing padded or truncated (what processors pass); any
other call, and any output it does not know to be per-token, goes to the tokenizer itself,
counted in ``stats()``. A served output carries no ``tokenizers`` encodings (they would
describe the shortened text), so ``encodings`` is ``None`` and ``word_ids()`` and the like
are unavailable on it; processors read only its values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from .calls import Declined, StandIn

# The processor's and the tokenizer's attributes naming the tokens a processor repeats.
_PLACEHOLDER_ATTRS = ("image_token", "video_token", "audio_token")
# Outputs with one entry per token; any other output of a call is not widened, so the call
# goes to the tokenizer.
_PER_TOKEN = frozenset({"input_ids", "attention_mask", "token_type_ids", "special_tokens_mask"})
# Call options whose value is the same for the cut text as for the whole one, and those
# that must be off (values that pad or truncate, or outputs that are not per-token).
_NEUTRAL = frozenset({"add_special_tokens", "return_tensors", "return_attention_mask", "return_token_type_ids",
                      "return_special_tokens_mask", "verbose", "padding_side", "truncation_side"})
_OFF = {
    "truncation": (None, False, "do_not_truncate"),
    "max_length": (None,),
    "stride": (0,),
    "pad_to_multiple_of": (None,),
    "return_overflowing_tokens": (None, False),
    "return_offsets_mapping": (None, False),
    "return_length": (None, False),
    "split_special_tokens": (None, False),
    "is_split_into_words": (None, False),
    "text_pair": (None,),
    "text_target": (None,),
    "text_pair_target": (None,),
}
# Padding one text pads nothing unless to a length or a multiple (refused by _OFF).
_PADDING = (None, False, True, "longest", "do_not_pad")


def placeholder_tokens(processor: Any, tokenizer: Any) -> dict[str, int]:
    """The placeholder tokens of ``processor`` (content -> id) that ``tokenizer`` turns into
    one id wherever they stand (module docstring); empty when the tokenizer is not a fast
    one or splits special tokens."""
    if not getattr(tokenizer, "is_fast", False) or getattr(tokenizer, "split_special_tokens", False):
        return {}
    added = {t.content: (i, t) for i, t in getattr(tokenizer, "added_tokens_decoder", {}).items()}
    names = {getattr(obj, a, None) for obj in (processor, tokenizer) for a in _PLACEHOLDER_ATTRS}
    found = {}
    for name in sorted(n for n in names if isinstance(n, str) and n in added):
        token_id, token = added[name]
        if token.normalized or token.lstrip or token.rstrip or token.single_word:
            continue
        if any(other != name and _overlap(name, other) for other in added):
            continue
        found[name] = token_id
    return found


def _overlap(a: str, b: str) -> bool:
    """Whether added tokens ``a`` and ``b`` could match over a common character: one holds the
    other, or an end of one is a start of the other."""
    if a in b or b in a:
        return True
    return any(a.endswith(b[:k]) or b.endswith(a[:k]) for k in range(1, min(len(a), len(b))))


class AcceleratedTokenizer(StandIn):
    """Stands in for ``original``, a fast tokenizer whose ``tokens`` (content -> id, from
    :func:`placeholder_tokens`) a processor repeats. Thread-safe: it holds nothing per call."""

    MEDIA = "text"

    def __init__(self, original: Any, tokens: Mapping[str, int]) -> None:
        super().__init__(original)
        self._name = _transformers_name(original)
        self._ids = dict(tokens)
        # What the tokens were found in: a call after the tokenizer gained added tokens (one
        # could overlap a placeholder) or began splitting special tokens goes to it.
        self._vocab = len(original)
        self._placeholder_ids = frozenset(self._ids.values())
        # Longest first: no token holds another (placeholder_tokens), so the order only
        # makes the alternation deterministic.
        self._order = sorted(self._ids, key=lambda t: (-len(t), t))
        self._runs = re.compile("|".join(f"(?:{re.escape(t)})+" for t in self._order))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        text = args[0] if args else kwargs.get(self.MEDIA)
        texts = [text] if isinstance(text, str) else text if isinstance(text, (list, tuple)) else ()
        if not any(isinstance(t, str) and self._repeats(t) for t in texts):
            # Nothing to cut: the tokenizer's own call, not counted.
            return self._original(*args, **kwargs)
        return super().__call__(*args, **kwargs)

    def __setattr__(self, name: str, value: Any) -> None:
        # A setting (padding_side, say) belongs to the tokenizer, whose own calls read it.
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._original, name, value)

    def _repeats(self, text: str) -> bool:
        return any(t + t in text for t in self._ids)

    def _serve(self, text: Any, kwargs: Mapping[str, Any]) -> Any:
        one = text if isinstance(text, str) else text[0] if len(text) == 1 and isinstance(text[0], str) else None
        if one is None:
            raise Declined("more than one text")
        if getattr(self._original, "split_special_tokens", False) or len(self._original) != self._vocab:
            raise Declined("added tokens or split_special_tokens changed since accelerate")
        for key, value in kwargs.items():
            if key == "padding":
                if value not in _PADDING and str(getattr(value, "value", value)) != "do_not_pad":
                    raise Declined(f"padding {value!r}")
            elif key in _OFF:
                if value not in _OFF[key]:
                    raise Declined(f"option {key}={value!r}")
            elif key not in _NEUTRAL:
                raise Declined(f"option {key!r}")
        counts: list[tuple[int, int]] = []

        def cut(m: re.Match[str]) -> str:
            run = m.group(0)
            token = next(t for t in self._order if run.startswith(t))
            counts.append((self._ids[token], len(run) // len(token)))
            return token

        short = self._runs.sub(cut, one)
        out = self._original(short if isinstance(text, str) else [short], **kwargs)
        unknown = set(out.keys()) - _PER_TOKEN
        if unknown:
            raise Declined(f"outputs {sorted(unknown)}")
        index = self._index(_row(out["input_ids"]), counts)
        for key in list(out.keys()):
            out[key] = _widen(out[key], index)
        out._encodings = None
        return out

    def _index(self, ids: list[int], counts: list[tuple[int, int]]) -> np.ndarray:
        """Each entry of the cut text's outputs, repeated as often as it stands for tokens of
        the whole text. The placeholder ids must come back one per cut run, in order."""
        repeat = np.ones(len(ids), np.intp)
        runs = iter(counts)
        for at, token_id in enumerate(ids):
            if token_id in self._placeholder_ids:
                want, k = next(runs, (None, 0))
                if want != token_id:
                    raise Declined("the cut text's ids do not hold one placeholder per run")
                repeat[at] = k
        if next(runs, None) is not None:
            raise Declined("the cut text's ids do not hold one placeholder per run")
        return np.repeat(np.arange(len(ids)), repeat)


def _row(ids: Any) -> list[int]:
    """The one sequence of ``input_ids`` (a list, a list of one list, or a ``[1, n]`` array or
    tensor) as a list of ints."""
    if hasattr(ids, "tolist"):
        ids = ids.tolist()
    return ids[0] if ids and isinstance(ids[0], list) else ids


def _widen(value: Any, index: np.ndarray) -> Any:
    """``value`` (as ``_row`` takes it) with its entries picked by ``index``, in its own type."""
    if isinstance(value, np.ndarray):
        return value[..., index]
    if type(value).__module__.startswith("torch"):
        import torch

        return value[..., torch.from_numpy(index)]
    if value and isinstance(value[0], list):
        return [np.asarray(value[0])[index].tolist()]
    return np.asarray(value)[index].tolist()


def _transformers_name(tokenizer: Any) -> str:
    """The transformers class ``tokenizer`` is (engines subclass it: vLLM's cached tokenizer)."""
    for cls in type(tokenizer).__mro__:
        if cls.__module__.startswith("transformers."):
            return cls.__name__
    return type(tokenizer).__name__
