"""A request's prompt as ids: given, or the text through the caller's tokenizer.

``tokenize`` may be a callable returning ids (a list, an array, or a mapping / HF
``BatchEncoding`` holding ``input_ids``), or an object with ``encode(text)`` (HF
tokenizers, tiktoken encodings); ``encode`` is preferred when both exist, since it
returns plain ids. Whatever comes back must be 1-D integers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

import numpy as np

from .errors import InvalidInputError, MmError
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


def prompt_ids(inp: MmInput, tokenize: Tokenize | None, id_range: tuple[int, int] | None) -> np.ndarray:
    """The ids the layout expands: ``inp.input_ids`` if non-empty, else the tokenized text,
    checked against the family's id range."""
    if inp.input_ids is not None and len(inp.input_ids) > 0:
        ids = inp.input_ids
    elif inp.text is None:
        raise InvalidInputError("multimodal request without text or input_ids")
    elif tokenize is None:
        raise InvalidInputError("request has text but no tokenize callable was given")
    else:
        ids = tokenize_text(tokenize, inp.text)
    if id_range is not None and len(ids):
        low, high = id_range
        bad = np.flatnonzero((ids < low) | (ids > high))
        if len(bad):
            k = int(bad[0])
            raise InvalidInputError(f"input_ids[{k}] = {int(ids[k])} is outside this family's id range [{low}, {high}]")
    return ids


__all__: Sequence[str] = ["Tokenize", "prompt_ids", "tokenize_text"]
