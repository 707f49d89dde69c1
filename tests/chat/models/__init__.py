"""Chat test models: one module per family (or model line), each a list ``MODELS`` of
:class:`ChatModel`. A model directory is built from what installs here (the hub is unreachable):
a tokenizer carrying the model's real special tokens and ids, its published chat template (test
data, sources in ``tests/chat/data/SOURCES.md``) and its published configs.

The live parity tests and the golden generator (``tests/chat/golden/generate_chat.py``) run
every case of every model through both our ``Processor`` and the model's transformers processor;
the golden replay runs ours against the recorded reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen
class Case:
    """One chat request. ``kwargs`` go to both sides' ``apply_chat_template`` (template keywords,
    ``tools``, ``add_generation_prompt``...); ``ours`` only to ours (``mm_processor_kwargs``),
    ``theirs`` only to transformers' (the same options in its spelling)."""

    messages: list[dict[str, Any]]
    kwargs: Mapping[str, Any] = attrs.field(factory=dict)
    ours: Mapping[str, Any] = attrs.field(factory=dict)
    theirs: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ChatModel:
    """``make_dir(root)`` writes the model directory into ``root`` and returns it (it skips the
    test, saying why, when something it needs is not installed); ``reference(root, backend)``
    is transformers' processor for it (``backend``: "pil" or "torchvision"), built from the
    directory as ``AutoProcessor.from_pretrained`` would; ``cases(media)`` the requests, their
    files written into ``media``; ``keys`` the model inputs compared byte for byte besides
    ``input_ids`` (``Output.model_kwargs()`` against the reference's ``BatchFeature``);
    ``positions_reference(root)``, for a model whose positions transformers computes in the model
    rather than the processor: a function giving the reference's ``(positions, delta)`` for an
    ``Output``, or None where what it needs (torch) is not installed."""

    name: str
    make_dir: Callable[[Path], Path]
    reference: Callable[[Path, str], Any]
    cases: Callable[[Path], Mapping[str, Case]]
    keys: tuple[str, ...]
    backends: tuple[str, ...] = ("pil",)
    positions_reference: Callable[[Path], Callable[[Any], tuple[Any, int]] | None] | None = None


# The AddedToken fields a tokenizer_config.json's added_tokens_decoder holds per token.
ADDED_TOKEN_FIELDS = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")


def added_token(token_id: int, content: str, special: bool = True) -> dict[str, Any]:
    """A tokenizer.json ``added_tokens`` entry as transformers' conversion scripts write one:
    matched verbatim (not normalized, no stripping)."""
    return {"id": token_id, "content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": special}


def tokenizer_config(added: Iterable[Mapping[str, Any]], **fields: Any) -> dict[str, Any]:
    """A tokenizer_config.json as ``save_pretrained`` writes it (keys sorted): ``fields`` and the
    ``added_tokens_decoder`` of ``added`` (tokenizer.json ``added_tokens`` entries, in order)."""
    decoder = {str(t["id"]): {k: t[k] for k in ADDED_TOKEN_FIELDS} for t in added}
    return dict(sorted({"added_tokens_decoder": decoder, **fields}.items()))
