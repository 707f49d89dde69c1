"""Counters of the calls the accelerated processors served and of those they handed back
to transformers, by reason; one lock, so threads may share them."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

_lock = threading.Lock()
_served: Counter[str] = Counter()
_fallbacks: Counter[str] = Counter()


def served(processor: str) -> None:
    with _lock:
        _served[processor] += 1


def fallback(processor: str, reason: str) -> None:
    with _lock:
        _fallbacks[f"{processor}: {reason}"] += 1


def stats() -> dict[str, Any]:
    """``{"served": {class: calls}, "fallbacks": {"<class>: <reason>": calls}}``, a snapshot."""
    with _lock:
        return {"served": dict(_served), "fallbacks": dict(_fallbacks)}


def reset_stats() -> None:
    with _lock:
        _served.clear()
        _fallbacks.clear()
