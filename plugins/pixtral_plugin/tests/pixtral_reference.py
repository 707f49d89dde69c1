"""The transformers 5.24 reference for the pixtral family, built offline.

Shared by the golden generator and the live parity tests, so both use one definition:

- :func:`image_processor`: ``PixtralImageProcessorPil`` (``backend="pil"``, needs no torch)
  or the torchvision ``PixtralImageProcessor`` (``backend="torchvision"``) from a preset's
  published ``preprocessor_config.json`` (``golden/models/<preset>/``).
- :func:`processor`: the real ``PixtralProcessor`` (its ``replace_image_token``,
  ``_get_num_multimodal_tokens`` and ``ProcessorMixin.__call__``) around that image
  processor and the Pixtral-12B tokenizer.
- :func:`tokenizer`: the Tekken vocabulary ``tekken_240911.json`` that the PyPI package
  ``mistral-common`` ships, converted by transformers' own ``MistralConverter``.

``processing_pixtral`` imports ``get_resize_output_image_size`` from the torchvision
module, which imports torch and torchvision at load time. Where those are missing, the
import is served by the PIL module's function of the same name after checking that the
two function bodies are the same source text, so the processor still runs unchanged.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import json
import os
import sys
import types
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "golden", "models")
TEKKEN_FILE = "tekken_240911.json"

# preset -> (model directory, chat template flavour)
PRESETS: dict[str, str] = {"pixtral_12b": "pixtral_12b", "mistral_small_3_1": "mistral_small_3_1"}

PIL_MODULE = "transformers.models.pixtral.image_processing_pil_pixtral"
TV_MODULE = "transformers.models.pixtral.image_processing_pixtral"
PROC_MODULE = "transformers.models.pixtral.processing_pixtral"


def model_config(preset: str, name: str) -> dict[str, Any]:
    with open(os.path.join(MODELS, PRESETS[preset], name), encoding="utf-8") as f:
        return json.load(f)


# backend -> (module, class) of transformers' image processor.
BACKENDS = {"pil": (PIL_MODULE, "PixtralImageProcessorPil"), "torchvision": (TV_MODULE, "PixtralImageProcessor")}


def image_processor(preset: str, backend: str = "pil"):
    """The ``backend``'s image processor exactly as ``from_pretrained`` would build it."""
    module, name = BACKENDS[backend]
    cls = getattr(importlib.import_module(module), name)
    return cls.from_dict(model_config(preset, "preprocessor_config.json"))


def _function_source(path: str, name: str) -> str:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(text, node)


@functools.lru_cache(maxsize=None)
def processor_class():
    """``(PixtralProcessor, how it was imported)``."""
    try:
        return importlib.import_module(PROC_MODULE).PixtralProcessor, "direct"
    except ImportError:
        pass
    sys.modules.pop(PROC_MODULE, None)
    pil = importlib.import_module(PIL_MODULE)
    tv_path = importlib.util.find_spec(TV_MODULE).origin
    for name in ("get_resize_output_image_size", "_num_image_tokens"):
        assert _function_source(tv_path, name) == _function_source(pil.__file__, name), (
            f"{name} differs between the PIL and torchvision Pixtral modules"
        )
    stand_in = types.ModuleType(TV_MODULE)
    stand_in.get_resize_output_image_size = pil.get_resize_output_image_size
    saved = sys.modules.get(TV_MODULE)
    sys.modules[TV_MODULE] = stand_in
    try:
        cls = importlib.import_module(PROC_MODULE).PixtralProcessor
    finally:
        if saved is None:
            sys.modules.pop(TV_MODULE, None)
        else:
            sys.modules[TV_MODULE] = saved
    return cls, "pil-function stand-in (torch/torchvision missing)"


def tekken_path() -> str:
    """Path of the Pixtral-12B Tekken file inside the installed ``mistral-common``."""
    import importlib.resources

    path = importlib.resources.files("mistral_common") / "data" / TEKKEN_FILE
    if not path.is_file():
        raise FileNotFoundError(f"mistral-common has no data/{TEKKEN_FILE}")
    return str(path)


@functools.lru_cache(maxsize=None)
def tokenizer():
    """The Pixtral-12B tokenizer (special tokens 0..999, ``[IMG]`` = 10) built offline."""
    from transformers import PreTrainedTokenizerFast
    from transformers.integrations.mistral.tokenizer import MistralConverter

    tok = PreTrainedTokenizerFast(
        tokenizer_object=MistralConverter(tekken_path()).converted(),
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
    )
    ids = tok.convert_tokens_to_ids(["<s>", "[INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]"])
    assert ids == [1, 3, 10, 12, 13], ids
    return tok


def processor(preset: str, backend: str = "pil"):
    """The real ``PixtralProcessor`` configured from the preset's ``processor_config.json``,
    around the ``backend``'s image processor."""
    cls, _ = processor_class()
    pc = model_config(preset, "processor_config.json")
    keys = ("patch_size", "spatial_merge_size", "image_token", "image_break_token", "image_end_token")
    kwargs = {k: pc[k] for k in keys if k in pc}
    return cls(image_processor=image_processor(preset, backend), tokenizer=tokenizer(), **kwargs)


# Prompts: turns of (role, [("image", name) | ("text", str)]).
Turns = list[tuple[str, list[tuple[str, str]]]]


def render(preset: str, turns: Turns) -> str:
    """The checkpoint's chat template rendering: ``[INST]...[/INST]`` turns, ``[IMG]`` per image.

    Mistral Small 3.1 opens with a system prompt (a short one here); Pixtral-12B has none.
    """
    out = ["<s>"]
    if preset == "mistral_small_3_1":
        out.append("[SYSTEM_PROMPT]You are a helpful assistant.[/SYSTEM_PROMPT]")
    for role, content in turns:
        body = "".join("[IMG]" if kind == "image" else value for kind, value in content)
        out.append(f"[INST]{body}[/INST]" if role == "user" else f"{body}</s>")
    return "".join(out)
