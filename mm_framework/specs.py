"""Where a spec comes from: a named preset, a model's Hugging Face configs or its directory,
or the ``--spec`` argument every command takes (:func:`spec_from_arg`, which names one of
those, a JSON file or inline JSON).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import plugins
from .errors import SpecError


def preset(name: str) -> dict[str, Any]:
    """The resolved spec dict of a named preset (e.g. ``"qwen2_vl"``)."""
    found = plugins.presets()
    if name not in found:
        raise SpecError(f"unknown preset {name!r}; installed presets: {sorted(found) or 'none'}")
    return found[name]


def spec_from_hf_configs(
    config: Mapping[str, Any],
    preprocessor_config: Mapping[str, Any],
    video_preprocessor_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Resolve a spec from a model's ``config.json`` and ``preprocessor_config.json`` dicts,
    and its ``video_preprocessor_config.json`` dict when the model has one."""
    return plugins.spec_from_hf_configs(config, preprocessor_config, video_preprocessor_config)


def read_json(path: str) -> Any:
    """The JSON value of the file ``path``; a missing or malformed file is a ``SpecError`` naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise SpecError(f"{path}: invalid JSON: {e}") from None


def spec_from_model_dir(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Resolve a spec from a model directory holding ``config.json`` and
    ``preprocessor_config.json``, and ``video_preprocessor_config.json`` when present
    (transformers reads it for the video processor, else the image processor's file)."""
    root = os.fspath(path)
    config, preprocessor = (read_json(os.path.join(root, n)) for n in ("config.json", "preprocessor_config.json"))
    video_path = os.path.join(root, "video_preprocessor_config.json")
    video = read_json(video_path) if os.path.exists(video_path) else None
    return spec_from_hf_configs(config, preprocessor, video)


def spec_from_arg(text: str) -> dict[str, Any]:
    """The spec a command's ``--spec`` names: a preset name, a model directory, a path to a JSON
    file, or inline JSON."""
    found = plugins.presets()
    if text in found:
        return found[text]
    if os.path.isdir(text):
        return spec_from_model_dir(text)
    if os.path.isfile(text):
        text = Path(text).read_text(encoding="utf-8")
    elif not text.lstrip().startswith("{"):
        raise SpecError(
            f"--spec {text!r} is neither a preset ({', '.join(sorted(found)) or 'none installed'}), "
            f"a model directory, a file nor JSON{plugins.hidden_note()}"
        )
    try:
        return json.loads(text)
    except ValueError as e:
        raise SpecError(f"--spec: invalid JSON: {e}") from None
