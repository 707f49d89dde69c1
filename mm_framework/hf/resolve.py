"""The spec of a transformers image processor: the installed family whose
``mm_spec_from_hf_configs`` accepts the processor's own ``to_dict()`` as its
``preprocessor_config.json``, for a model type transformers pairs that class with.

transformers' auto mapping names, per model type, the image processor class of each
backend (``{"pil": "Qwen2VLImageProcessorPil", "torchvision": "Qwen2VLImageProcessor"}``):
that gives both the candidate model types and the backend, which the saved dict does not
say (``image_processor_type`` is the torchvision class's name for both).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import SpecError, UnsupportedError
from ..plugins import claimed_spec


def candidates(class_name: str) -> list[tuple[str, str]]:
    """``(model_type, backend)`` of every model type whose image processor is ``class_name``."""
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES

    found = []
    for model_type, names in IMAGE_PROCESSOR_MAPPING_NAMES.items():
        if isinstance(names, dict):
            found += [(model_type, backend) for backend, name in names.items() if name == class_name]
    return found


def image_processor_spec(image_processor: Any, changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec cloning ``image_processor`` (with the saved config's keys in ``changes``
    replaced: a call's kwargs); ``UnsupportedError`` saying why for each model type tried
    when no installed family clones it."""
    name = type(image_processor).__name__
    # As saved (to_dict keeps enums such as PILImageResampling; the JSON has their values).
    saved = {**json.loads(image_processor.to_json_string()), **(changes or {})}
    model_types = candidates(name)
    tried = []
    for model_type, backend in model_types:
        try:
            spec = claimed_spec({"model_type": model_type}, saved)
        except SpecError as e:
            tried.append(f"{model_type}: {e}")
            continue
        if spec is None:
            continue
        if spec.get("backend", "pil") != backend:
            if "backend" not in spec:
                tried.append(f"{model_type}: family {spec['family']!r} has no {backend} backend")
                continue
            spec["backend"] = backend
        return spec
    types = sorted({t for t, _ in model_types})
    why = "; ".join(tried) or f"no installed family handles model type {', '.join(types) or 'any'}"
    raise UnsupportedError(f"{name}: no installed family clones it ({why})")
