"""A model directory's tokenizer: the Hugging Face ``tokenizers`` library on ``tokenizer.json``,
with the added and special tokens of ``tokenizer_config.json`` (or, lacking its
``added_tokens_decoder``, the legacy ``special_tokens_map.json`` and ``added_tokens.json``),
read the way ``transformers.AutoTokenizer.from_pretrained(dir)`` reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import SpecError
from .extra import need
from .files import optional_json, read_json

# transformers' SPECIAL_TOKENS_ATTRIBUTES: the named special tokens a template sees as variables.
NAMED_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


def _text_of(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return value["content"]
    raise SpecError(f"{where} must be a token string or an AddedToken object, got {value!r}")


def _added_token(tokenizers: Any, value: Any, where: str, **defaults: bool) -> Any:
    if isinstance(value, str):
        return tokenizers.AddedToken(value, **defaults)
    if not isinstance(value, Mapping) or not isinstance(value.get("content"), str):
        raise SpecError(f"{where} must be an AddedToken object with a 'content' string, got {value!r}")
    flags = {k: value[k] for k in _FLAGS if k in value}
    if not all(isinstance(v, bool) for v in flags.values()):
        raise SpecError(f"{where}: AddedToken flags must be booleans, got {flags!r}")
    return tokenizers.AddedToken(value["content"], **{**defaults, **flags})


def _key(token: Any) -> tuple[Any, ...]:
    return (token.content, *(getattr(token, k) for k in _FLAGS))


class ChatTokenizer:
    """Text to ids as the model's ``transformers`` tokenizer makes them (``encode``), and the
    special tokens its chat template sees (``special_tokens_map``)."""

    __slots__ = ("_tok", "special_tokens_map", "extra_special_tokens", "bos_token")

    def __init__(self, tok: Any, special_tokens_map: dict[str, str], extra_special_tokens: tuple[str, ...]) -> None:
        self._tok = tok
        self.special_tokens_map = special_tokens_map
        self.extra_special_tokens = extra_special_tokens
        self.bos_token = special_tokens_map.get("bos_token")

    @classmethod
    def from_model_dir(cls, path: str | os.PathLike[str]) -> ChatTokenizer:
        tokenizers = need("tokenizers")
        root = os.fspath(path)
        file = os.path.join(root, "tokenizer.json")
        if not os.path.isfile(file):
            raise SpecError(f"{file}: no such file (the chat front door needs the model's fast tokenizer)")
        read_json(file)  # a malformed file is named as such, not as whatever the Rust parser says
        try:
            tok = tokenizers.Tokenizer.from_file(file)
        except Exception as e:  # the Rust parser's own exception type
            raise SpecError(f"{file}: not a tokenizers serialization: {e}") from None
        config_file = os.path.join(root, "tokenizer_config.json")
        config = optional_json(root, "tokenizer_config.json") or {}
        named, model_specific, extras = _specials(config, config_file)
        if "added_tokens_decoder" in config:
            decoder = _decoder(tokenizers, config["added_tokens_decoder"], config_file)
        else:
            # transformers reads these legacy files only when the config has no added_tokens_decoder.
            legacy = optional_json(root, "special_tokens_map.json") or {}
            where = os.path.join(root, "special_tokens_map.json")
            for key, value in legacy.items():
                if key in ("additional_special_tokens", "extra_special_tokens"):
                    extras += [t for t in _token_list(value, f"{where}: {key}") if t not in extras]
                elif key.endswith("_token"):
                    text = _text_of(value, f"{where}: {key}")
                    (named if key in NAMED_TOKENS else model_specific)[key] = text
            decoder = _legacy_decoder(tokenizers, root, {*named.values(), *extras} - {None})
        tok.encode_special_tokens = bool(config.get("split_special_tokens", False))
        _add_tokens(tokenizers, tok, decoder, [t for t in named.values() if t is not None], extras)
        for index, token in decoder.items():
            got = tok.token_to_id(token.content)
            if got != index:
                raise SpecError(
                    f"{config_file if 'added_tokens_decoder' in config else root}: added token "
                    f"{token.content!r} is declared with id {index} but tokenizer.json gives it id {got}"
                )
        specials = {k: v for k, v in {**named, **model_specific}.items() if v is not None}
        return cls(tok, specials, tuple(extras))

    def add_special_tokens_for(self, text: str) -> bool:
        """Whether the processor adds the tokenizer's special tokens to ``text``: yes unless the
        text already starts with the BOS token (transformers' ProcessorMixin.apply_chat_template)."""
        return not (self.bos_token is not None and text.startswith(self.bos_token))

    def encode(self, text: str) -> np.ndarray:
        """``text`` as int64 ids, as the model's processor tokenizes a rendered chat."""
        return np.asarray(self._encoding(text).ids, dtype=np.int64)

    def encode_with_offsets(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode`, and each id's ``(start, end)`` characters of ``text`` (a prompt
        expanded as text finds its items' tokens by them, :mod:`mm_framework.text_prompt`)."""
        enc = self._encoding(text)
        return np.asarray(enc.ids, dtype=np.int64), np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)

    def _encoding(self, text: str) -> Any:
        return self._tok.encode(text, add_special_tokens=self.add_special_tokens_for(text))

    def __repr__(self) -> str:
        return f"ChatTokenizer(vocab={self._tok.get_vocab_size(with_added_tokens=True)})"


def _token_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise SpecError(f"{where} must be a list of tokens, got {type(value).__name__}")
    return [t for t in (_text_of(v, where) for v in value) if t is not None]


def _specials(config: Mapping[str, Any], where: str) -> tuple[dict[str, str | None], dict[str, str | None], list[str]]:
    """The named special tokens, the model's own ``*_token`` entries (str values, as
    transformers collects them) and the extra special tokens of ``tokenizer_config.json``."""
    named = {k: _text_of(config[k], f"{where}: {k}") for k in NAMED_TOKENS if k in config}
    model_specific: dict[str, str | None] = {
        k: v for k, v in config.items() if k not in NAMED_TOKENS and k.endswith("_token") and isinstance(v, str)
    }
    extra = config.get("extra_special_tokens") or config.get("additional_special_tokens") or []
    if isinstance(extra, Mapping):
        model_specific.update({k: _text_of(v, f"{where}: extra_special_tokens") for k, v in extra.items()})
        extra = []
    return named, model_specific, _token_list(extra, f"{where}: extra_special_tokens")


def _decoder(tokenizers: Any, value: Any, where: str) -> dict[int, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where}: added_tokens_decoder must be an object of id -> AddedToken")
    out = {}
    for index, token in value.items():
        try:
            i = int(index)
        except (TypeError, ValueError):
            raise SpecError(f"{where}: added_tokens_decoder key {index!r} is not a token id") from None
        out[i] = _added_token(tokenizers, token, f"{where}: added_tokens_decoder[{index}]")
    return dict(sorted(out.items()))


def _legacy_decoder(tokenizers: Any, root: str, specials: set[str]) -> dict[int, Any]:
    where = os.path.join(root, "added_tokens.json")
    legacy = optional_json(root, "added_tokens.json") or {}
    out = {}
    for content, index in legacy.items():
        if not isinstance(index, int) or isinstance(index, bool):
            raise SpecError(f"{where}: the id of {content!r} must be an integer, got {index!r}")
        special = content in specials
        out[index] = tokenizers.AddedToken(content, rstrip=False, lstrip=False, normalized=not special, special=special)
    return dict(sorted(out.items()))


def _add_tokens(tokenizers: Any, tok: Any, decoder: Mapping[int, Any], named: list[str], extras: list[str]) -> None:
    """transformers' TokenizersBackend: the declared added tokens the backend lacks (same
    content and flags), then any named or extra special token not yet a token, in that order."""
    have = {_key(t) for t in tok.get_added_tokens_decoder().values()}
    missing = [t for t in decoder.values() if _key(t) not in have]
    known = {t.content for t in tok.get_added_tokens_decoder().values()} | {t.content for t in missing}
    by_content = {t.content: t for t in decoder.values()}
    for text in [*named, *extras]:
        if text not in known:
            token = by_content.get(text) or tokenizers.AddedToken(text, special=True)
            if not token.special and text in named:
                token = tokenizers.AddedToken(text, **{**{k: getattr(token, k) for k in _FLAGS}, "special": True})
            missing.append(token)
            known.add(text)
    if missing:
        tok.add_tokens(missing)
