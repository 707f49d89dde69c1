"""English cardinal numbers as ``num2words(n)`` (its default ``lang="en"``) spells them.

``SmolVLMProcessor.replace_video_token`` writes a video's frame count in words; the family
must not depend on num2words for that, so this is the same spelling for ``0 <= n < 10**12``
(British "and" after hundreds and before a last group below 100, a comma between groups,
hyphenated tens), tested equal to num2words over a wide range in the torchvision venv.
"""

from __future__ import annotations

from mm_framework.plugin import InternalError

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
         "seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_GROUPS = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"))
LIMIT = 10**12


def _below_hundred(n: int) -> str:
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


def _below_thousand(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    if not hundreds:
        return _below_hundred(rest)
    head = f"{_ONES[hundreds]} hundred"
    return f"{head} and {_below_hundred(rest)}" if rest else head


def cardinal(n: int) -> str:
    """``num2words(n)`` for ``0 <= n < 10**12``."""
    if not 0 <= n < LIMIT:
        raise InternalError(f"cardinal: {n} is outside 0..{LIMIT - 1}")
    if n < 1000:
        return _below_thousand(n)
    parts: list[str] = []
    for size, name in _GROUPS:
        count, n = divmod(n, size)
        if count:
            parts.append(f"{_below_thousand(count)} {name}")
    if not n:
        return ", ".join(parts)
    # A last group below 100 joins with "and", a larger one with a comma.
    return ", ".join(parts) + (f" and {_below_hundred(n)}" if n < 100 else f", {_below_thousand(n)}")
