"""The spec of a transformers image processor: the installed family whose
``mm_spec_from_hf_configs`` accepts the processor's own ``to_dict()`` as its
``preprocessor_config.json``, for a model type transformers pairs that class with.

transformers' auto mapping names, per model type, the image processor class of each
backend (``{"pil": "Qwen2VLImageProcessorPil", "torchvision": "Qwen2VLImageProcessor"}``):
that gives both the candidate model types and the backend, which the saved dict does not
say (``image_processor_type`` is the torchvision class's name for both).

A video processor is resolved the same way from transformers' video mapping, its dict
taken as the ``video_preprocessor_config.json`` next to a ``preprocessor_config.json``
holding the keys of it that the model type's image processor also takes (the patch
geometry and statistics a family may share between the two). Its frame sampling keys are
left out and sampling is off: the adapter samples with the video processor's own
``sample_frames`` and hands the pipeline the chosen frames.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..errors import SpecError, UnsupportedError
from ..plugins import claimed_spec


# The video processor keys only its frame sampling reads (sample_frames).
SAMPLING = ("fps", "num_frames", "min_frames", "max_frames")


def _mapping(kind: str) -> dict[str, Any]:
    if kind == "video":
        from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

        return VIDEO_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES

    return IMAGE_PROCESSOR_MAPPING_NAMES


def candidates(class_name: str, kind: str = "image") -> list[tuple[str, str]]:
    """``(model_type, backend)`` of every model type whose image (``kind="video"``: video)
    processor is ``class_name``."""
    found = []
    for model_type, names in _mapping(kind).items():
        if isinstance(names, dict):
            found += [(model_type, backend) for backend, name in names.items() if name == class_name]
    return found


def image_processor_spec(image_processor: Any, changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec cloning ``image_processor`` (with the saved config's keys in ``changes``
    replaced: a call's kwargs); ``UnsupportedError`` saying why for each model type tried
    when no installed family clones it."""
    saved = {**_saved(image_processor), **(changes or {})}
    return _claimed(type(image_processor).__name__, "image", lambda model_type: (saved, None))


def video_processor_spec(video_processor: Any) -> dict[str, Any]:
    """The spec of a pipeline giving ``video_processor``'s tensors for the frames it sampled
    (its dict with sampling off); ``UnsupportedError`` as :func:`image_processor_spec`."""
    saved = {**{k: v for k, v in _saved(video_processor).items() if k not in SAMPLING}, "do_sample_frames": False}

    def configs(model_type: str) -> tuple[dict[str, Any], dict[str, Any]]:
        keys = _image_processor_keys(model_type)
        return {k: v for k, v in saved.items() if k in keys}, saved

    return _claimed(type(video_processor).__name__, "video", configs)


def _saved(processor: Any) -> dict[str, Any]:
    """``processor``'s config as saved (to_dict keeps enums such as PILImageResampling; the
    JSON has their values). A processor whose own ``to_dict`` refuses to serialize it
    (Ernie 4.5-VL's video processor without its font file) is one no family can clone."""
    try:
        return json.loads(processor.to_json_string())
    except Exception as e:  # noqa: BLE001 (any failure of a third-party to_dict)
        raise UnsupportedError(
            f"{type(processor).__name__}: its configuration does not serialize ({type(e).__name__}: {e})"
        ) from e


def _image_processor_keys(model_type: str) -> frozenset[str]:
    """The call options of ``model_type``'s image processor (none when it has none)."""
    import transformers

    names = _mapping("image").get(model_type)
    if not isinstance(names, dict):
        return frozenset()
    name = names.get("pil") or next(iter(names.values()))
    kwargs = getattr(getattr(transformers, name, None), "valid_kwargs", None)
    return frozenset(getattr(kwargs, "__annotations__", ()))


def _claimed(name: str, kind: str, configs: Any) -> dict[str, Any]:
    """The first installed family's spec for one of the model types ``name`` serves,
    from ``configs(model_type)``: its preprocessor and video preprocessor configs."""
    model_types = candidates(name, kind)
    tried = []
    for model_type, backend in model_types:
        try:
            spec = claimed_spec({"model_type": model_type}, *configs(model_type))
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
