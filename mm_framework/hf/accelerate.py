"""``accelerate``: put an :class:`~.image_processor.AcceleratedImageProcessor` in a
transformers processor (or return one for a bare image processor)."""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from . import stats
from .image_processor import AcceleratedImageProcessor
from .resolve import image_processor_spec


def accelerate(processor: Any, *, strict: bool = False) -> Any:
    """``processor`` with its ``image_processor`` served by mm_framework, the same object
    (a bare image processor comes back wrapped). When no installed family clones it, the
    processor is returned unchanged and ``stats()`` records why, or with ``strict=True``
    the ``UnsupportedError`` saying so is raised."""
    bare = not hasattr(processor, "image_processor")
    image_processor = processor if bare else processor.image_processor
    if isinstance(image_processor, AcceleratedImageProcessor):
        return processor
    try:
        accelerated = AcceleratedImageProcessor(image_processor, image_processor_spec(image_processor))
    except UnsupportedError as e:
        if strict:
            raise
        stats.fallback(type(image_processor).__name__, f"not accelerated: {e}")
        return processor
    if bare:
        return accelerated
    processor.image_processor = accelerated
    return processor
