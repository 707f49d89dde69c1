"""transformers-compatible processors backed by mm_framework.

``accelerate(processor)`` returns a transformers processor (``Qwen2VLProcessor``, say, or
a bare image or video processor) whose image processor, and video processor where a family
clones it, is served by a pipeline of the installed family that clones it: the same call,
the same ``BatchFeature``, byte for byte. Whatever it cannot serve exactly (an option it
does not mirror, an input form it does not take) goes to the original processor, and
``stats()`` counts why (docs/engines.md).

transformers is imported only when ``accelerate`` is called; it is the adapter's target,
not a dependency of the core.
"""

from __future__ import annotations

from .accelerate import accelerate
from .stats import reset_stats, stats

__all__ = ["accelerate", "reset_stats", "stats"]
