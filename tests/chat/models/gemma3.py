"""google/gemma-3-4b-it (``gemma3``, ``Gemma3Processor``) as a chat test model.

The real Gemma 3 vocabulary is not available offline, so the tokenizer is a small BPE with the
Gemma 3 tokenizer's structure (what ``GemmaTokenizer`` rebuilds from ``tokenizer.json``: spaces
normalised to ``"▁"``, byte fallback, ``<bos>`` added by the post-processor) and its real ids for
everything the family's spec pins: the special tokens, the newline runs ``"\\n" * k`` =
``106 + k`` (added tokens, so the text is split at them and runs merge when the processor writes
``"\\n\\n"`` next to a newline: ``"user\\n" + "\\n\\n"`` is one token ``"\\n\\n\\n"``), and the
words of pan-and-scan's prose. Other words get made-up ids. The configs are the checkpoint's
(docs/families/gemma3.md §1), the chat template the published one (tests/chat/data/SOURCES.md).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from mm_framework.testing import load_module, sample_image

from . import Case, ChatModel, added_token, tokenizer_config

ROOT = Path(__file__).parents[3]
TEMPLATE = (Path(__file__).parents[1] / "data" / "gemma_3_4b_it" / "chat_template.jinja").read_text(encoding="utf-8")
REFERENCE = ROOT / "plugins" / "gemma3_plugin" / "tests" / "gemma3_reference.py"

# google/gemma-3-4b-it's config.json (the multimodal part; docs/families/gemma3.md §1).
CONFIG = {
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3", "text_config": {"hidden_size": 2560, "model_type": "gemma3_text"},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "model_type": "siglip_vision_model", "patch_size": 14},
}
PROCESSOR_CONFIG = {"image_seq_length": 256, "processor_class": "Gemma3Processor"}

SPECIAL = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<mask>": 4, "<start_of_turn>": 105, "<end_of_turn>": 106,
           "<start_of_image>": 255999, "<end_of_image>": 256000, "<image_soft_token>": 262144}
NEWLINES = {"\n" * k: 106 + k for k in range(1, 32)}
# Gemma 3's ids of pan-and-scan's words (the spec's pan_and_scan_*_ids, docs/families/gemma3.md §3).
WORDS = {"Here": 8291, "▁is": 563, "▁the": 506, "▁original": 3303, "▁image": 2471, "▁": 236743, "▁and": 532,
         "▁here": 1590, "▁are": 659, "▁some": 1070, "▁crops": 20859, "▁to": 531, "▁help": 1601, "▁you": 611,
         "▁see": 1460, "▁better": 2480, "user": 2364}
# Words of the test messages, ids made up (from FIRST on).
OTHER_WORDS = ["model", "▁What", "What", "▁this", "this", "▁these", "▁Compare", "Compare", "Describe", "▁Describe",
               "▁picture", "▁them", "You", "▁terse", "▁cat", "▁dog", "▁sure", "Sure", "▁It"]
# A merge across the edge of pan-and-scan's prose: transformers writes the prose straight after
# the text before the image ("these:" + "Here is ..."), so only tokenizing the processor's text
# (the family's mm_expansion_text) gives ":Here"; expanding in ids gives ":" "Here".
GLUED = [(":", "Here")]
FIRST = 10_000
CHARS = "".join(chr(c) for c in range(33, 127)) + "▁"


def _vocab_and_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Every character, the byte-fallback tokens, and each word built left to right by merges."""
    vocab = {**SPECIAL, **NEWLINES, **WORDS}
    fresh = iter(i for i in range(FIRST, 1 << 30) if i not in vocab.values())
    for piece in [*CHARS, *(f"<0x{b:02X}>" for b in range(256))]:
        vocab.setdefault(piece, next(fresh))
    merges: list[tuple[str, str]] = []
    for word in [*WORDS, *OTHER_WORDS]:
        for k in range(2, len(word) + 1):
            left, right = word[: k - 1], word[k - 1]
            if (left, right) not in merges:
                merges.append((left, right))
            vocab.setdefault(word[:k], next(fresh))
    for left, right in GLUED:
        merges.append((left, right))
        vocab.setdefault(left + right, next(fresh))
    return vocab, merges


def tokenizer_json() -> str:
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import BPE

    vocab, merges = _vocab_and_merges()
    tok = Tokenizer(BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                       special_tokens=[("<bos>", 2)])
    for text, special in sorted([(t, True) for t in SPECIAL] + [(t, False) for t in NEWLINES],
                                key=lambda ts: vocab[ts[0]]):
        tok.add_tokens([AddedToken(text, special=special, normalized=False)])
    assert all(tok.token_to_id(t) == i for t, i in {**SPECIAL, **NEWLINES}.items())
    return tok.to_str()


def gemma3_tokenizer_config() -> dict[str, Any]:
    """google/gemma-3-4b-it's tokenizer_config.json, its added_tokens_decoder cut to the tokens
    this tokenizer has."""
    added = sorted((added_token(i, t, t in SPECIAL) for t, i in {**SPECIAL, **NEWLINES}.items()),
                   key=lambda t: t["id"])
    return tokenizer_config(added, **{
        "add_bos_token": True, "add_eos_token": False,
        "boi_token": "<start_of_image>", "bos_token": "<bos>", "chat_template": TEMPLATE,
        "clean_up_tokenization_spaces": False, "eoi_token": "<end_of_image>", "eos_token": "<eos>",
        "extra_special_tokens": {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                 "image_token": "<image_soft_token>"},
        "image_token": "<image_soft_token>", "model_max_length": 1000000000000000019884624838656,
        "pad_token": "<pad>", "padding_side": "left", "processor_class": "Gemma3Processor",
        "sp_model_kwargs": None, "spaces_between_special_tokens": False, "tokenizer_class": "GemmaTokenizer",
        "unk_token": "<unk>", "use_default_system_prompt": False,
    })


def make_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    preprocessor = load_module(REFERENCE, "gemma3_chat_reference").PREPROCESSOR_CONFIG
    files = {"config.json": CONFIG, "preprocessor_config.json": preprocessor, "processor_config.json": PROCESSOR_CONFIG,
             "tokenizer_config.json": gemma3_tokenizer_config()}
    for name, value in files.items():
        (root / name).write_text(json.dumps(value, indent=2), encoding="utf-8")
    (root / "tokenizer.json").write_text(tokenizer_json(), encoding="utf-8")
    (root / "chat_template.json").write_text(json.dumps({"chat_template": TEMPLATE}), encoding="utf-8")
    return root


def reference(root: Path, backend: str) -> Any:
    """``AutoProcessor`` on ``backend``; the class is checked, since a backend it cannot build
    would otherwise fall back to another one and the comparison would prove nothing."""
    import transformers

    proc = transformers.AutoProcessor.from_pretrained(root, backend=backend)
    want = {"pil": "Gemma3ImageProcessorPil", "torchvision": "Gemma3ImageProcessor"}[backend]
    assert type(proc.image_processor).__name__ == want, (backend, type(proc.image_processor).__name__)
    return proc


def cases(media: Path) -> dict[str, Case]:
    wide, square = sample_image(1000, 300, "PNG", seed=11), sample_image(90, 60, "JPEG", seed=12)
    (media / "gemma3_wide.png").write_bytes(wide)
    path = str(media / "gemma3_wide.png")
    url = "data:image/jpeg;base64," + base64.b64encode(square).decode()
    image = {"type": "image", "url": url}
    pas = {"ours": {"mm_processor_kwargs": {"do_pan_and_scan": True}},
           "theirs": {"processor_kwargs": {"do_pan_and_scan": True}}}
    prompt = {"add_generation_prompt": True}  # transformers' default is False, ours True: both spelt out

    def user(*parts: Any) -> dict[str, Any]:
        return {"role": "user", "content": list(parts)}

    def text(t: str) -> dict[str, str]:
        return {"type": "text", "text": t}

    return {
        "one_image": Case([user(image, text("Describe this picture."))], prompt),
        "text_before_image": Case([user(text("Compare these:"), image, text("What is this?"))], prompt),
        # The system prompt ends in "\n\n", which meets the image's "\n\n" ("\n" * 4).
        "system_then_image": Case([{"role": "system", "content": "You are terse."}, user(image, text("What?"))],
                                  prompt),
        "system_parts": Case([{"role": "system", "content": [text("You are terse.")]}, user(text("What?"), image)],
                             prompt),
        "adjacent_images_path": Case([user(image, {"type": "image", "path": path}, text("Compare them."))], prompt),
        "image_only_turn": Case([user(image)], prompt),
        "multi_turn": Case([user(image, text("What is this?")),
                            {"role": "assistant", "content": [text("A cat.")]},
                            user(text("And this?"), {"type": "image", "path": path})], prompt),
        "text_only": Case([user(text("Sure?"))], prompt),
        "string_content": Case([{"role": "user", "content": "What is this?"}], prompt),
        "no_generation_prompt": Case([user(image, text("What?"))], kwargs={"add_generation_prompt": False}),
        "continue_final": Case([user(image, text("What?")), {"role": "assistant", "content": "It is"}],
                               kwargs={"continue_final_message": True}),
        "pan_and_scan": Case([user({"type": "image", "path": path}, text("Describe this picture."))], prompt, **pas),
        "pan_and_scan_between": Case([user(text("Compare these:"), {"type": "image", "path": path}, image,
                                           {"type": "image", "path": path})], prompt, **pas),
    }


MODELS = [
    # token_type_ids (transformers' other output) is input_ids == image_token_id, per token, not a
    # family output (docs/families/gemma3.md §3); equal ids make it equal.
    # Both image backends: Gemma3ImageProcessorPil and Gemma3ImageProcessor (the spec's "backend").
    ChatModel("gemma3", make_dir, reference, cases, keys=("pixel_values",), backends=("pil", "torchvision")),
]
