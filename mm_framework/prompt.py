"""A request's prompt as ids: given, the text through the caller's tokenizer, or one
placeholder per item.

``tokenize`` may be a callable returning ids (a list, an array, or a mapping / HF
``BatchEncoding`` holding ``input_ids``), or an object with ``encode(text)`` (HF
tokenizers, tiktoken encodings); ``encode`` is preferred when both exist, since it
returns plain ids. Whatever comes back must be 1-D integers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

import numpy as np

from .carriers import Capabilities
from .errors import InvalidInputError, LayoutError, MmError
from .request import MmInput, input_ids_array

Tokenize = Union[Callable[[str], Any], Any]


def _ids_of(result: Any) -> Any:
    if isinstance(result, Mapping) or hasattr(result, "input_ids"):
        try:
            return result["input_ids"] if isinstance(result, Mapping) else result.input_ids
        except KeyError:
            raise InvalidInputError(
                f"tokenize returned a {type(result).__name__} without 'input_ids' (keys: {sorted(map(str, result))})"
            ) from None
    return result


def tokenize_text(tokenize: Tokenize, text: str) -> np.ndarray:
    """``text`` through ``tokenize`` as 1-D int64 ids; a typed error says what came back."""
    encode = getattr(tokenize, "encode", None)
    fn = encode if callable(encode) else tokenize
    if not callable(fn):
        raise InvalidInputError(
            f"tokenize must be a callable or have an encode(text) method, got {type(tokenize).__name__}"
        )
    try:
        result = fn(text)
    except MmError:
        raise
    except Exception as e:
        raise InvalidInputError(f"tokenize failed: {type(e).__name__}: {e}") from e
    return input_ids_array(_ids_of(result), what=f"tokenize result ({type(result).__name__})")


def default_prompt(family: str, placeholders: Mapping[str, int], modalities: Sequence[str]) -> list[int]:
    """The prompt of a request that gives neither ids nor text: one placeholder per item,
    in item order (``Capabilities.placeholders``)."""
    missing = next((m for m in modalities if m not in placeholders), None)
    if missing is not None:
        raise InvalidInputError(
            f"request without text or input_ids, and family {family!r} names no {missing} placeholder "
            f"to build a default prompt from: give input_ids (--input-ids) or text"
        )
    return [int(placeholders[m]) for m in modalities]


def _has_ids(inp: MmInput) -> bool:
    return inp.input_ids is not None and len(inp.input_ids) > 0


def default_ids(inp: MmInput, family: str, capabilities: Capabilities) -> np.ndarray | None:
    """:func:`default_prompt` for a request that gives neither ids nor text, else None."""
    if _has_ids(inp) or inp.text is not None:
        return None
    return input_ids_array(default_prompt(family, capabilities.placeholders, [m for m, _ in inp.sources]))


def prompt_ids(inp: MmInput, tokenize: Tokenize | None, family: str, capabilities: Capabilities) -> np.ndarray:
    """The ids the layout expands: ``inp.input_ids`` if non-empty, else the tokenized text,
    else one placeholder per item; checked against the family's id range."""
    if _has_ids(inp):
        ids = inp.input_ids
    elif inp.text is None:
        ids = default_ids(inp, family, capabilities)
    elif tokenize is None:
        raise InvalidInputError("request has text but no tokenize callable was given")
    else:
        ids = tokenize_text(tokenize, inp.text)
    return in_id_range(ids, capabilities)


def in_id_range(ids: np.ndarray, capabilities: Capabilities) -> np.ndarray:
    """``ids``, once every one is checked against the family's id range."""
    if capabilities.id_range is not None and len(ids):
        low, high = capabilities.id_range
        bad = np.flatnonzero((ids < low) | (ids > high))
        if len(bad):
            k = int(bad[0])
            raise InvalidInputError(f"input_ids[{k}] = {int(ids[k])} is outside this family's id range [{low}, {high}]")
    return ids


def split_placeholder(
    inp: MmInput, ids: np.ndarray, capabilities: Capabilities, modalities: Sequence[str]
) -> LayoutError | None:
    """Why a text prompt's layout failed, when the text holds a placeholder's text but its
    ids hold no placeholder id: the tokenizer split the special token into ordinary ids."""
    if _has_ids(inp) or inp.text is None:
        return None
    for modality in dict.fromkeys(modalities):
        text, pid = capabilities.placeholder_texts.get(modality), capabilities.placeholders.get(modality)
        if text is not None and text in inp.text and not np.any(ids == pid):
            return LayoutError(
                f"prompt has 0 {modality} placeholder(s) for {list(modalities).count(modality)} {modality} item(s): "
                f"the text holds {text!r} but the tokenizer did not map it to id {pid}: "
                f"the tokenizer lacks the model's special tokens"
            )
    return None


def check_no_stray_placeholder(ids: np.ndarray, capabilities: Capabilities, modalities: Sequence[str]) -> None:
    """A placeholder of a modality the request has no item of is a :class:`LayoutError`:
    the model would look for that item's features. (Each family's layout checks the
    modalities that have items; an id shared with one of those is theirs.)"""
    present = set(modalities)
    owned = {pid for m, pid in capabilities.placeholders.items() if m in present}
    for modality, pid in capabilities.placeholders.items():
        if modality in present or pid in owned:
            continue
        where = np.flatnonzero(ids == pid)
        if where.size:
            raise LayoutError(
                f"prompt has {where.size} {modality} placeholder(s) but 0 {modality} item(s) "
                f"(placeholder id {pid}, first at token {int(where[0])})"
            )


__all__: Sequence[str] = [
    "Tokenize", "check_no_stray_placeholder", "default_ids", "default_prompt", "in_id_range", "prompt_ids",
    "split_placeholder", "tokenize_text",
]
