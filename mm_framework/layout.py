"""TokenLayout: how a prompt expands around its media, as a value.

A family describes the expansion; :func:`apply_layout` performs and validates it, so
expanded ids, offsets and positions all derive from one value and cannot disagree.
Expansion happens in token-id space: non-media tokens are copied, never re-tokenized.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Union

import attrs
import numpy as np

from .checks import check_int
from .errors import LayoutError


def _nonneg(_inst: object, attr: attrs.Attribute, value: int) -> None:
    check_int(value, f"layout: {attr.name}", minimum=0, error=LayoutError)


def _positive(_inst: object, attr: attrs.Attribute, value: int) -> None:
    check_int(value, f"layout: {attr.name}", minimum=1, error=LayoutError)


@attrs.frozen
class Repeat:
    """``n`` copies of one placeholder id (Qwen style)."""

    id: int = attrs.field(converter=int)
    n: int = attrs.field(validator=_nonneg)


def _ids(value: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(v) for v in value)


@attrs.frozen
class Explicit:
    """An explicit id run; only ``ids[content_start:content_end]`` belongs to the item.

    Tokens outside the content range are wrapper markers (``<img>``, ``</img>``) and stay
    out of the reported offsets.
    """

    ids: tuple[int, ...] = attrs.field(converter=_ids)
    content_start: int = attrs.field(default=0, validator=_nonneg)
    content_end: int | None = None

    @property
    def content(self) -> tuple[int, int]:
        end = len(self.ids) if self.content_end is None else self.content_end
        return self.content_start, end


Pattern = Union[Repeat, Explicit]


@attrs.frozen
class Text:
    """Copy ``src[start:end]`` of the original ids verbatim."""

    start: int = attrs.field(validator=_nonneg)
    end: int = attrs.field(validator=_nonneg)


@attrs.frozen
class Media:
    """Replace ``span`` source tokens from the resume index with media item ``item``
    expanded by ``pattern``.

    ``span`` is 1 (the placeholder) unless the reference's tokenizer merges the expansion
    with neighbouring tokens: then the family replaces those neighbours too and puts the
    merged tokens in ``pattern`` (Gemma 3's newline runs, docs/families/gemma3.md §3).
    """

    item: int = attrs.field(validator=_nonneg)
    pattern: Pattern = attrs.field(validator=attrs.validators.instance_of((Repeat, Explicit)))
    span: int = attrs.field(default=1, validator=_positive)


Segment = Union[Text, Media]


@attrs.frozen
class TokenLayout:
    segments: tuple[Segment, ...] = attrs.field(converter=tuple)

    @segments.validator
    def _check(self, _attr: attrs.Attribute, value: tuple[Segment, ...]) -> None:
        for seg in value:
            if not isinstance(seg, (Text, Media)):
                raise LayoutError(f"layout: segment must be Text or Media, got {type(seg).__name__}")


@attrs.frozen(eq=False)
class ExpandedPrompt:
    input_ids: np.ndarray
    offsets: tuple[tuple[int, int], ...]


def apply_layout(src_ids: Sequence[int] | np.ndarray, layout: TokenLayout, n_items: int) -> ExpandedPrompt:
    """Expand ``src_ids`` by ``layout`` for ``n_items`` media items.

    Validates that every source token is consumed exactly once, in order, and every item
    is placed exactly once with a non-empty span. Offsets are inclusive ``(start, end)``,
    indexed by item.
    """
    src = np.asarray(src_ids, dtype=np.int64)
    n_src = len(src)
    parts: list[np.ndarray] = []
    out_len = 0
    offsets: list[tuple[int, int] | None] = [None] * n_items
    consumed = 0
    for seg in layout.segments:
        if isinstance(seg, Text):
            a, b = seg.start, seg.end
            if a > b or b > n_src:
                raise LayoutError(f"layout: text range {a}..{b} out of bounds")
            if a != consumed:
                raise LayoutError(f"layout: text range {a}..{b} does not resume at source index {consumed}")
            consumed = b
            if b > a:
                parts.append(src[a:b])
                out_len += b - a
            continue
        item, pattern = seg.item, seg.pattern
        if consumed + seg.span > n_src:
            where = f"index {consumed}" if seg.span == 1 else f"indices {consumed}..{consumed + seg.span}"
            raise LayoutError(f"layout: media item {item} has no source placeholder at {where}")
        consumed += seg.span
        if isinstance(pattern, Repeat):
            start, n = out_len, pattern.n
            run = np.full(n, pattern.id, dtype=np.int64)
        else:
            cs, ce = pattern.content
            if cs >= ce or ce > len(pattern.ids):
                raise LayoutError(
                    f"layout: media item {item} content range {cs}..{ce} outside its {len(pattern.ids)} token(s)"
                )
            start, n = out_len + cs, ce - cs
            run = np.asarray(pattern.ids, dtype=np.int64)
        if n == 0:
            raise LayoutError(f"layout: media item {item} expands to zero tokens")
        if item >= n_items:
            raise LayoutError(f"layout: media item {item} out of range")
        if offsets[item] is not None:
            raise LayoutError(f"layout: media item {item} placed twice")
        offsets[item] = (start, start + n - 1)
        parts.append(run)
        out_len += len(run)
    if consumed != n_src:
        raise LayoutError(f"layout: covers {consumed} of {n_src} source token(s)")
    for i, off in enumerate(offsets):
        if off is None:
            raise LayoutError(f"layout: media item {i} not placed")
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return ExpandedPrompt(input_ids=ids, offsets=tuple(offsets))  # type: ignore[arg-type]


def layout_by_placeholder(
    ids: Sequence[int] | np.ndarray, placeholder_id: int, counts: Sequence[int]
) -> TokenLayout:
    """The i-th ``placeholder_id`` in ``ids`` becomes ``counts[i]`` copies of itself."""
    return layout_by_placeholders(
        ids, {"media": placeholder_id}, ["media"] * len(counts), lambda i: Repeat(placeholder_id, int(counts[i]))
    )


def layout_by_placeholders(
    ids: Sequence[int] | np.ndarray,
    placeholders: Mapping[str, int],
    modalities: Sequence[str],
    pattern: Callable[[int], Pattern],
) -> TokenLayout:
    """Each modality's k-th placeholder id in ``ids`` becomes that modality's k-th item, expanded
    to ``pattern(item)``; every other token is text.

    ``placeholders``: the placeholder id of each modality; ``modalities``: the modality of each
    item, in the request's item order (images, then videos, then audios). Items interleave in
    the prompt however the placeholders do. A modality whose placeholder count differs from
    its item count is a :class:`LayoutError` naming both and the id.
    """
    src = np.asarray(ids, dtype=np.int64)
    slots: list[tuple[int, int]] = []
    for modality, pid in placeholders.items():
        items = [i for i, m in enumerate(modalities) if m == modality]
        where = np.flatnonzero(src == pid).tolist()
        if len(where) != len(items):
            raise LayoutError(
                f"prompt has {len(where)} {modality} placeholder(s) but {len(items)} {modality} item(s) "
                f"(placeholder id {pid})"
            )
        slots += zip(where, items)
    segments: list[Segment] = []
    text_start = 0
    for pos, item in sorted(slots):
        if pos > text_start:
            segments.append(Text(text_start, pos))
        segments.append(Media(item, pattern(item)))
        text_start = pos + 1
    if text_start < len(src):
        segments.append(Text(text_start, len(src)))
    return TokenLayout(segments)
