"""vLLM general plugin: the HF processor calls of vLLM's Qwen-VL multimodal processors,
served by ``mm_framework.hf.accelerate``.

The seam is ``InputProcessingContext.call_hf_processor(hf_processor, data, kwargs)``, the
one place every multimodal processor's ``_call_hf_processor`` (and Qwen3-VL's own
override) calls transformers. ``register`` wraps it: for a served model class the call
goes to a shallow copy of ``hf_processor`` whose image processor is accelerated, made once
per processor object. The copy, not the object itself, because vLLM reads the cached
processor outside the call too (prompt updates, token counts, dummy inputs): those keep
seeing transformers' own image processor, and everything vLLM does around the call
(hashing, the processor cache, prompt updates, mm_processor_kwargs merging, the
``mm_device_do_normalize`` switches, dtype conversion) is its own code, unchanged.

``MM_FRAMEWORK_VLLM=0`` leaves vLLM untouched (docs/engines.md, "vLLM").
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from typing import Any

# vLLM architectures whose processor calls are served: the ones plugins/vllm_plugin/tests proves equal to
# vLLM without the plugin. Others keep transformers unchanged.
SERVED = (
    "Gemma3ForConditionalGeneration",
    "Gemma4ForConditionalGeneration",
    "Glm4vForConditionalGeneration",
    "LlavaOnevisionForConditionalGeneration",
    "Mistral3ForConditionalGeneration",
    "PaddleOCRVLForConditionalGeneration",
    "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration",
    "Qwen3VLForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
)

_lock = threading.Lock()
# hf_processor -> the processor the call goes to (the accelerated copy, or the processor
# itself when mm_framework clones none of it), so each object is looked at once.
_served: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_registered = False
_announced = False


def enabled() -> bool:
    return os.environ.get("MM_FRAMEWORK_VLLM", "1") != "0"


def register() -> None:
    """The ``vllm.general_plugins`` entry point; vLLM may call it more than once per process."""
    global _registered
    if _registered or not enabled():
        return
    from vllm.multimodal.processing.context import InputProcessingContext

    original = InputProcessingContext.call_hf_processor

    def call_hf_processor(self: Any, hf_processor: Any, data: Any, kwargs: Any = {}) -> Any:
        return original(self, served_processor(self.model_config, hf_processor), data, kwargs)

    call_hf_processor.__wrapped__ = original  # type: ignore[attr-defined]
    call_hf_processor.__doc__ = original.__doc__
    InputProcessingContext.call_hf_processor = call_hf_processor
    _registered = True


def _announce() -> None:
    """Log, once per process, what is served. At the first HF call rather than at
    registration: vLLM loads plugins before it configures its logging (``vllm serve``
    parses arguments after loading them), so a record at registration can be lost."""
    global _announced
    if _announced:
        return
    _announced = True
    from vllm.logger import init_logger

    # Under "vllm.": vLLM's logging configuration covers only its own logger tree.
    init_logger("vllm.plugins.mm_framework").info(
        "mm_framework serves the HF image (and Qwen-VL, GLM-4.1V video) processor calls of %s "
        "(MM_FRAMEWORK_VLLM=0 turns it off)",
        ", ".join(SERVED),
    )


def served_processor(model_config: Any, hf_processor: Any) -> Any:
    """What a call of ``hf_processor`` for ``model_config``'s model goes to."""
    architectures = set(getattr(model_config, "architectures", None) or ())
    if not architectures & set(SERVED):
        return hf_processor
    if not hasattr(hf_processor, "image_processor"):
        return hf_processor
    with _lock:
        _announce()
        found = _served.get(hf_processor)
        if found is None:
            from mm_framework import hf

            twin = copy.copy(hf_processor)
            # vLLM casts every floating output of the call to the model's dtype
            # (InputProcessingContext._postprocess_output): for a bfloat16 model the image
            # features are written in bfloat16 at once, the values that cast gives.
            cast = "bfloat16" if str(getattr(model_config, "dtype", "")) == "torch.bfloat16" else None
            accelerated = hf.accelerate(twin, cast=cast)
            # accelerate leaves a processor it cannot clone as it was (and counts why).
            found = accelerated if accelerated.image_processor is not hf_processor.image_processor else hf_processor
            _served[hf_processor] = found
        return found
