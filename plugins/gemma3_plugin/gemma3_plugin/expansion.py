"""Gemma 3's prompt expansion in token-id space, newline merging included.

transformers replaces each ``<start_of_image>`` by text and retokenizes
(docs/families/gemma3.md §3). The expansion of an image with ``c`` crops is, in ids::

    c == 0:  "\\n\\n" core "\\n\\n"          core = <boi> soft*S <eoi>
    c  > 0:  core "\\n\\n"                   core = intro F crops F (sep F)*(c-1), minus the last "\\n\\n"

with ``F`` = ``"\\n\\n" <boi> soft*S <eoi> "\\n\\n"``. The tokenizer encodes every run of
newlines as one greedy sequence of newline tokens, so the ``"\\n\\n"`` at either end of an
expansion merges with newline tokens next to it in the prompt and with the wrapper of an
adjacent image. The layout therefore treats each *cluster* (a maximal stretch of the
prompt made of placeholders and newline tokens, holding at least one placeholder) as a
whole: the first item of a cluster replaces the newline tokens before it, each later item
those between it and the previous one, the last item also those after it; each merged
newline run is re-encoded and emitted by the item that replaced its source tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from mm_framework import plugin as mmp

from .spec import Gemma3Spec


@attrs.frozen
class Core:
    """One item's expansion between its outer newline wrappers."""

    ids: tuple[int, ...]
    lead: int  # newlines before ``ids`` ("\n\n" = 2, or 0 when the core opens with prose)
    content_start: int  # first soft token within ``ids``
    content_end: int  # one past the last soft token

    @property
    def tokens(self) -> int:
        """The item's reported span: first to last soft token, inner markers included."""
        return self.content_end - self.content_start


def build_core(s: Gemma3Spec, crops: int) -> Core:
    """The expansion core of an image with ``crops`` crops."""
    nl2 = s.newline_token_id + 1
    block = (s.boi_token_id,) + (s.image_token_id,) * s.image_seq_length + (s.eoi_token_id,)
    if crops == 0:
        return Core(block, 2, 1, 1 + s.image_seq_length)
    full = (nl2, *block, nl2)
    ids = s.pan_and_scan_intro_ids + full + s.pan_and_scan_crops_ids + full
    ids += (s.pan_and_scan_separator_ids + full) * (crops - 1)
    ids = ids[:-1]  # the final "\n\n" is the trailing wrapper, merged like any other
    return Core(ids, 0, len(s.pan_and_scan_intro_ids) + 2, len(ids) - 1)


def build_cores(s: Gemma3Spec) -> tuple[Core, ...]:
    """``cores[c]``: the expansion core of an image with ``c`` crops, for every ``c`` the spec allows."""
    return tuple(build_core(s, c) for c in range(s.pan_and_scan_max_num_crops + 1))


def newline_tokens(count: int, s: Gemma3Spec) -> list[int]:
    """The tokenizer's ids for ``count`` newlines: longest runs first, then the rest."""
    full, rest = divmod(count, s.newline_run_max)
    out = [s.newline_token_id + s.newline_run_max - 1] * full
    if rest:
        out.append(s.newline_token_id + rest - 1)
    return out


def layout(ids: np.ndarray, cores: Sequence[Core], s: Gemma3Spec) -> mmp.TokenLayout:
    """The layout of prompt ``ids`` whose i-th placeholder expands to ``cores[i]``."""
    places = np.flatnonzero(ids == s.boi_token_id)
    if len(places) != len(cores):
        raise mmp.LayoutError(
            f"gemma3: prompt has {len(places)} <start_of_image> placeholder(s) (id {s.boi_token_id}) "
            f"but {len(cores)} image(s)"
        )
    newline = (ids >= s.newline_ids.start) & (ids < s.newline_ids.stop)
    # Newline count of every source token (0 for the rest), for summing runs.
    widths = np.where(newline, ids - s.newline_token_id + 1, 0)
    segments: list[mmp.Text | mmp.Media] = []
    done = 0  # source tokens consumed so far
    item = 0
    n = len(ids)
    while item < len(cores):
        # The cluster around this placeholder: newline tokens before it, then placeholders
        # and newline tokens up to the next other token.
        p = int(places[item])
        start = p
        while start > done and newline[start - 1]:
            start -= 1
        if start > done:
            segments.append(mmp.Text(done, start))
        carried = int(widths[start:p].sum())  # newlines waiting before the next core
        cut = start  # first source token the next item replaces
        while True:
            core = cores[item]
            nxt = p + 1
            while nxt < n and newline[nxt]:
                nxt += 1
            between = int(widths[p + 1 : nxt].sum())
            last = nxt >= n or ids[nxt] != s.boi_token_id
            end = nxt if last else p + 1
            head = newline_tokens(carried + core.lead, s)
            tail = newline_tokens(2 + between, s) if last else []
            pattern = mmp.Explicit(
                (*head, *core.ids, *tail), len(head) + core.content_start, len(head) + core.content_end
            )
            segments.append(mmp.Media(item, pattern, span=end - cut))
            item += 1
            if last:
                done = end
                break
            carried, cut, p = 2 + between, end, nxt
    if done < n:
        segments.append(mmp.Text(done, n))
    return mmp.TokenLayout(segments)
