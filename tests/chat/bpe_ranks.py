"""Byte-level BPE tokenizers from tiktoken-style ranks (token bytes -> rank) with ``tokenizers``
alone, as transformers' ``TikTokenConverter`` and ``MistralConverter`` convert them, for the chat
test models whose vocabulary ships as ranks (Qwen2's ``qwen.tiktoken``, Mistral's Tekken file).
The golden replay builds their directories with this, transformers being blocked there; the
``tokenizer.json`` it gives is transformers' byte for byte (the replay checks its sha256 against
the one the generator recorded from transformers' own conversion)."""

from __future__ import annotations


def byte_symbols() -> dict[int, str]:
    """GPT-2's byte-to-character table (transformers' ``bytes_to_unicode``)."""
    printable = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)}
    extra = iter(range(256, 512))
    return {b: chr(b) if b in printable else chr(next(extra)) for b in range(256)}


def vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The converters' vocabulary and merges: every split of a token into two tokens is a merge
    at the token's rank, a token's splits ordered by their parts' ranks."""
    symbols = byte_symbols()

    def text(b: bytes) -> str:
        return "".join(symbols[c] for c in b)

    merges = []
    for token, rank in ranks.items():
        local = [(token[:i], token[i:], rank) for i in range(1, len(token))
                 if token[:i] in ranks and token[i:] in ranks]
        merges.extend(sorted(local, key=lambda m: (ranks[m[0]], ranks[m[1]])))
    merges.sort(key=lambda m: m[2])
    return {text(t): r for t, r in ranks.items()}, [(text(a), text(b)) for a, b, _ in merges]
