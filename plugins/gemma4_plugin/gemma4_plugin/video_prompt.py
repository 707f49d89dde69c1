"""How a video expands in a Gemma 4 prompt (``Gemma4Processor.replace_video_token``).

The ``<|video|>`` placeholder becomes, per kept frame, ``f"{mm:ss} {boi}{video * n}{eoi}"``,
the frames joined by ``" "`` (docs/families/gemma4.md §6). The timestamp text always sits
between special tokens or at their edge, and the Gemma tokenizer splits digits one per
token and writes a space as its own ``"▁"`` token there, so the expansion is a fixed id
pattern once the ids of the digits, ``":"`` and ``"▁"`` are known (:class:`TimestampIds`,
spec fields). The chat front door tokenizes the processor's own text instead
(:func:`expansion_text`), exact whatever those ids are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from mm_framework.plugin import InternalError

# The pieces of a timestamp text, in the order of the spec field's ids.
TIMESTAMP_PIECES = (*"0123456789", ":", " ")


def clock(seconds: float) -> str:
    """The processor's ``f"{int(s // 60):02d}:{int(s % 60):02d}"``."""
    return f"{int(seconds // 60):02d}:{int(seconds % 60):02d}"


@attrs.frozen
class TimestampIds:
    """Token ids of each of :data:`TIMESTAMP_PIECES` (digits, colon, space)."""

    ids: Mapping[str, int] = attrs.field(converter=lambda m: dict(m))

    def __attrs_post_init__(self) -> None:
        if set(self.ids) != set(TIMESTAMP_PIECES):
            raise InternalError(f"timestamp ids must map exactly {list(TIMESTAMP_PIECES)}, got {sorted(self.ids)}")

    @property
    def space(self) -> int:
        return self.ids[" "]

    def clock_ids(self, seconds: float) -> list[int]:
        return [self.ids[ch] for ch in clock(seconds)]

    def video_ids(self, stamps: Sequence[float], soft_tokens: int, video_id: int, boi: int, eoi: int
                  ) -> tuple[list[int], int, int]:
        """The ids replacing one ``<|video|>`` and the item's span in them: first to last soft token."""
        frame = [boi] + [video_id] * soft_tokens + [eoi]
        out: list[int] = []
        for k, t in enumerate(stamps):
            if k:
                out.append(self.space)
            out += self.clock_ids(t) + [self.space] + frame
        start = len(self.clock_ids(stamps[0])) + 2
        return out, start, len(out) - 1


def expansion_text(stamps: Sequence[float], soft_tokens: int, video_token: str, boi: str, eoi: str) -> str:
    """The processor's text for one video."""
    return " ".join(f"{clock(t)} {boi}{video_token * soft_tokens}{eoi}" for t in stamps)
