"""``accelerate``: put an :class:`~.image_processor.AcceleratedImageProcessor` (and an
:class:`~.video_processor.AcceleratedVideoProcessor`) in a transformers processor, or
return one for a bare image (video) processor."""

from __future__ import annotations

from typing import Any

from ..errors import UnsupportedError
from . import stats
from .image_processor import AcceleratedImageProcessor
from .resolve import image_processor_spec, video_processor_spec
from .tokenizer import AcceleratedTokenizer, placeholder_tokens
from .video_processor import AcceleratedVideoProcessor


def accelerate(processor: Any, *, strict: bool = False, cast: str | None = None) -> Any:
    """``processor`` with its ``image_processor`` served by mm_framework, and its
    ``video_processor`` too when a family clones it: the same object (a bare image or video
    processor comes back wrapped). An image processor (or a bare one) that no installed
    family clones is left as it is and ``stats()`` records why, or with ``strict=True`` the
    ``UnsupportedError`` saying so is raised. A processor's video processor is optional
    (most families take no video): one no family clones is left as it is, uncounted
    (``accelerate(processor.video_processor, strict=True)`` says why).

    ``cast="bfloat16"`` is for a caller that casts every floating output to bfloat16 right
    after each call (vLLM, for a bfloat16 model): image and video features then come in
    bfloat16 where the family writes them so (image_processor.py), the values that cast
    gives.

    Its tokenizer, when it is a fast one, is wrapped too (tokenizer.py): the text's runs of
    a repeated placeholder token are tokenized as one token each and widened back, the
    same values for a fraction of the time."""
    if _is_video_processor(processor):
        return _wrapped(processor, AcceleratedVideoProcessor, video_processor_spec, strict, cast=cast)
    if not hasattr(processor, "image_processor"):
        return _wrapped(processor, AcceleratedImageProcessor, image_processor_spec, strict, cast=cast)
    processor.image_processor = _wrapped(processor.image_processor, AcceleratedImageProcessor, image_processor_spec,
                                         strict, cast=cast)
    video = getattr(processor, "video_processor", None)
    if video is not None and not isinstance(video, AcceleratedVideoProcessor):
        try:
            processor.video_processor = AcceleratedVideoProcessor(video, video_processor_spec(video), cast=cast)
        except UnsupportedError:
            pass
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is not None and not isinstance(tokenizer, AcceleratedTokenizer):
        tokens = placeholder_tokens(processor, tokenizer)
        if tokens:
            processor.tokenizer = AcceleratedTokenizer(tokenizer, tokens)
    return processor


def _wrapped(original: Any, accelerated: type, spec_of: Any, strict: bool, **options: Any) -> Any:
    if isinstance(original, accelerated):
        return original
    try:
        return accelerated(original, spec_of(original), **options)
    except UnsupportedError as e:
        if strict:
            raise
        stats.fallback(type(original).__name__, f"not accelerated: {e}")
        return original


def _is_video_processor(processor: Any) -> bool:
    from transformers.video_processing_utils import VideoProcessorMixin

    return isinstance(processor, (VideoProcessorMixin, AcceleratedVideoProcessor))
