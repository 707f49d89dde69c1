"""SGLang general plugin: the HF image processor calls of SGLang's Qwen-VL multimodal
processors, served by ``mm_framework.hf.accelerate``.

The seam is ``BaseMultimodalProcessor._resolve_processor(processor=None)``, the one place
SGLang's multimodal processors get the HF processor they call: ``process_mm_data`` (the
whole ``processor(text=..., images=...)`` call), Qwen-VL's ``prepare_artifact_batch``
(``processor.image_processor(...)``, the preprocess-cache and Qwen3-VL path), and the
per-thread processor clones of SGLang's worker pool, which arrive as its ``processor``
argument. ``register`` puts an AROUND hook on it in SGLang's ``HookRegistry``: for a served
architecture the processor returned is a shallow copy whose image processor is
accelerated, made once per processor object. The copy, not the object itself, because
SGLang reads the processor outside the call too (special tokens, fingerprints, the fast
path's prompt templates): those keep seeing transformers' own image processor, and
everything SGLang does around the call (token expansion, M-RoPE, hashing, the caches) is
its own code, unchanged. Where SGLang preprocesses on the accelerator (its torchvision image
processor on a CUDA, XPU or NPU host) the processor is left as it is: the plugin serves what
SGLang runs on the CPU.

``MM_FRAMEWORK_SGLANG=0`` leaves SGLang untouched (docs/sglang.md).
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import weakref
from typing import Any

TARGET = "sglang.srt.multimodal.processors.base_processor.BaseMultimodalProcessor._resolve_processor"

# SGLang architectures whose processor calls are served: the ones plugins/sglang_plugin/tests proves equal
# to SGLang without the plugin. Others (Qwen3-VL-MoE, the Omni thinkers, ...) keep transformers unchanged.
SERVED = (
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
    return os.environ.get("MM_FRAMEWORK_SGLANG", "1") != "0"


def register() -> None:
    """The ``sglang.srt.plugins`` entry point. SGLang's ``load_plugins()`` applies the hook
    after running it; a caller of ``register`` alone runs ``HookRegistry.apply_hooks()``."""
    global _registered
    if _registered or not enabled():
        return
    from sglang.srt.plugins.hook_registry import HookRegistry, HookType

    HookRegistry.register(TARGET, resolve_processor, HookType.AROUND)
    _registered = True


def resolve_processor(original: Any, mm_processor: Any, processor: Any = None) -> tuple[Any, Any]:
    """The AROUND hook: SGLang's own resolution, with the served processor in place of the HF one."""
    hf_processor, tokenizer = original(mm_processor, processor)
    return served_processor(mm_processor, hf_processor), tokenizer


def _announce() -> None:
    """Log, once per process, what is served. At the first processor served rather than at
    registration: SGLang loads plugins in processes whose logging it configures later."""
    global _announced
    if _announced:
        return
    _announced = True
    # Under "sglang.": SGLang configures the root logger, and its own tree follows it.
    logging.getLogger("sglang.srt.plugins.mm_framework").info(
        "mm_framework serves the HF image processor calls of %s (MM_FRAMEWORK_SGLANG=0 turns it off)",
        ", ".join(SERVED),
    )


def served_processor(mm_processor: Any, hf_processor: Any) -> Any:
    """What a use of ``hf_processor`` by SGLang's multimodal processor ``mm_processor`` goes to."""
    architectures = getattr(getattr(mm_processor, "hf_config", None), "architectures", None) or ()
    if not set(architectures) & set(SERVED):
        return hf_processor
    if not hasattr(hf_processor, "image_processor"):
        return hf_processor
    with _lock:
        found = _served.get(hf_processor)
        if found is None:
            found = hf_processor if _on_accelerator(mm_processor) else _accelerated(hf_processor)
            _served[hf_processor] = found
            if found is not hf_processor:
                _announce()
        return found


def _on_accelerator(mm_processor: Any) -> bool:
    """Whether SGLang runs this processor's image preprocessing on the GPU (or XPU, NPU): its
    torchvision image processor, given ``device="cuda:N"``, on a CUDA host. Left to SGLang:
    the plugin serves on the CPU, whose results are transformers' CPU results, not the
    device's, and whether moving that work to the CPU pays is not measured here."""
    competes = getattr(mm_processor, "_preprocessing_competes_with_the_scheduler", None)
    return bool(competes and competes())


def _accelerated(hf_processor: Any) -> Any:
    from mm_framework import hf

    accelerated = hf.accelerate(copy.copy(hf_processor))
    # accelerate leaves a processor it cannot clone as it was (and counts why).
    return accelerated if accelerated.image_processor is not hf_processor.image_processor else hf_processor
