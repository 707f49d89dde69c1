"""A prompt expanded as text, for items whose expansion only exists as text
(``Capabilities.text_prompts``: SmolVLM's video prose, with its frame count in words).

Each placeholder text in the prompt is replaced by its item's ``mm_expansion_text`` and the
result is tokenized once, as the model's processor tokenizes it. The tokenizer must report
each token's character span, since that is the only way to tell which tokens came from an
item's text once they merged with the prompt around it: an item's span is the run of
tokens lying wholly inside its expansion text (a token straddling its edge, merged with the
prompt, is the prompt's).

``tokenize`` gives those spans as an object with ``encode_with_offsets(text) -> (ids,
offsets)`` (the chat front door's tokenizer) or as a transformers fast tokenizer
(``return_offsets_mapping``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .carriers import Capabilities
from .errors import InvalidInputError, LayoutError, MmError, UnsupportedError
from .layout import ExpandedPrompt
from .prompt import Tokenize, in_id_range
from .request import MmInput, input_ids_array


def expands_as_text(capabilities: Capabilities, modalities: Sequence[str]) -> bool:
    """Whether a request with items of ``modalities`` has its prompt expanded as text."""
    return any(m in capabilities.text_prompts for m in modalities)


def check_text_prompt(inp: MmInput, family: str, capabilities: Capabilities) -> None:
    """Refuse, before any I/O, a request expanded as text that gives no text."""
    modalities = [it.modality for it in inp.items]
    if expands_as_text(capabilities, modalities) and inp.text is None:
        first = next(k for k, m in enumerate(modalities) if m in capabilities.text_prompts)
        raise UnsupportedError(
            f"a {modalities[first]}'s prompt is text in family {family!r} (its expansion is prose the tokenizer "
            f"merges with the prompt around it), which token ids cannot hold: send the prompt as text with a "
            f"tokenizer reporting character offsets (the chat front door, mmf.Processor, does)", item=first)


def _ids_and_offsets(tokenize: Any, text: str) -> tuple[np.ndarray, np.ndarray]:
    encode = getattr(tokenize, "encode_with_offsets", None)
    try:
        if callable(encode):
            ids, offsets = encode(text)
        elif getattr(tokenize, "is_fast", False) and callable(tokenize):
            enc = tokenize(text, return_offsets_mapping=True)
            ids, offsets = enc["input_ids"], enc["offset_mapping"]
        else:
            raise UnsupportedError(
                f"this prompt is expanded as text, which needs a tokenizer reporting each token's characters: an "
                f"object with encode_with_offsets(text) or a transformers fast tokenizer, got {type(tokenize).__name__}"
            )
    except MmError:
        raise
    except Exception as e:
        raise InvalidInputError(f"tokenize failed: {type(e).__name__}: {e}") from e
    ids = input_ids_array(ids, what="tokenize result")
    try:
        offsets = np.asarray(offsets)
    except (TypeError, ValueError):  # ragged pairs: no array at all
        raise InvalidInputError(f"tokenize gave character offsets that make no array (pairs of unequal lengths?); "
                                f"expected ({len(ids)}, 2) integers") from None
    if not len(ids) and not offsets.size:
        offsets = np.zeros((0, 2), dtype=np.int64)
    if offsets.shape != (len(ids), 2) or not np.issubdtype(offsets.dtype, np.integer):
        raise InvalidInputError(f"tokenize gave {len(ids)} ids but character offsets of shape {offsets.shape} "
                                f"({offsets.dtype}); expected ({len(ids)}, 2) integers")
    _check_offsets(offsets, len(text))
    return ids, offsets.astype(np.int64)


def _check_offsets(offsets: np.ndarray, length: int) -> None:
    """Offsets a span can be read from: each ``0 <= start <= end <= length`` (checked in the
    tokenizer's own dtype, so a uint64 above int64 cannot wrap), and the tokens holding
    characters in text order. Zero-width tokens (special tokens a post-processor adds, at
    ``(0, 0)``) hold none, so they may sit anywhere."""
    start, end = offsets[:, 0], offsets[:, 1]
    bad = np.flatnonzero((start < 0) | (end < start) | (end > length))
    if len(bad):
        k = int(bad[0])
        raise InvalidInputError(f"tokenize gave token {k} the character offsets ({start[k]}, {end[k]}), which are "
                                f"not 0 <= start <= end <= {length} (the expanded prompt's length)")
    held = np.flatnonzero(end > start)
    back = np.flatnonzero((start[held[1:]] < start[held[:-1]]) | (end[held[1:]] < end[held[:-1]]))
    if len(back):
        j, k = int(held[back[0]]), int(held[back[0] + 1])
        raise InvalidInputError(f"tokenize gave token {k} the character offsets ({start[k]}, {end[k]}), before "
                                f"token {j}'s ({start[j]}, {end[j]}): a token's characters must not come before "
                                f"those of the tokens ahead of it")


def expand_as_text(
    inp: MmInput, tokenize: Tokenize | None, family: str, capabilities: Capabilities, modalities: Sequence[str],
    expansion_text: Callable[[int], str | None],
) -> ExpandedPrompt:
    """The ids of ``inp.text`` (which :func:`check_text_prompt` passed) with the k-th placeholder
    text of each modality replaced by the expansion text of that modality's k-th item
    (``expansion_text(item)``), and each item's span, in item order."""
    if tokenize is None:
        raise InvalidInputError("request has text but no tokenize callable was given")
    first = next(k for k, m in enumerate(modalities) if m in capabilities.text_prompts)
    texts = []
    for k, m in enumerate(modalities):
        text = expansion_text(k)
        if text is None:
            raise UnsupportedError(f"family {family!r} writes no expansion text for {m} items, which a prompt "
                                   f"expanded as text needs (it holds a {modalities[first]})", item=k)
        texts.append(text)
    marks = {capabilities.placeholder_texts[m]: m for m in dict.fromkeys(modalities)}
    pieces = re.split("(" + "|".join(re.escape(t) for t in sorted(marks, key=len, reverse=True)) + ")", inp.text)
    queues = {m: [k for k, mk in enumerate(modalities) if mk == m] for m in marks.values()}
    written = {m: pieces[1::2].count(t) for t, m in marks.items()}
    for m, items in queues.items():
        if written[m] != len(items):
            raise LayoutError(f"prompt text has {written[m]} {capabilities.placeholder_texts[m]!r} placeholder(s) "
                              f"for {len(items)} {m} item(s)")
    expanded, spans, at = [], [(0, 0)] * len(modalities), 0
    for j, piece in enumerate(pieces):
        if j % 2:
            k = queues[marks[piece]].pop(0)
            piece = texts[k]
            spans[k] = (at, at + len(piece))
        expanded.append(piece)
        at += len(piece)
    ids, offsets = _ids_and_offsets(tokenize, "".join(expanded))
    in_id_range(ids, capabilities)
    out = []
    for k, (a, b) in enumerate(spans):
        inside = np.flatnonzero((offsets[:, 0] >= a) & (offsets[:, 1] <= b) & (offsets[:, 1] > offsets[:, 0]))
        if not len(inside) or inside[-1] - inside[0] + 1 != len(inside):
            raise LayoutError(f"the tokenizer's character offsets place no run of tokens inside its "
                              f"expansion text (characters {a}..{b} of the expanded prompt)", item=k)
        out.append((int(inside[0]), int(inside[-1])))
    return ExpandedPrompt(input_ids=ids, offsets=tuple(out))


__all__: Sequence[str] = ["check_text_prompt", "expand_as_text", "expands_as_text"]
