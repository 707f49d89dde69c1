"""transformers' Kimi_K25Processor built offline (test support, also for the golden generator).

The image processor comes from explicit arguments (``Kimi_K25ImageProcessor``'s class
defaults, which the ``kimi_k2_5`` preset copies: docs/families/kimi_k25.md §1). The hub is
unreachable and the real tokenizer is not installed, so the tokenizer is built here with the
``tokenizers`` library: a word-level vocabulary whose special tokens (the media markers the
chat template writes around an image, and its turn markers) carry the Kimi K2 ids. Everything
the processor adds to a prompt is ``<|media_pad|>``, so the expanded ids are the real
tokenizer's wherever the prompt's own text is; text words are a small vocabulary.

Videos: :func:`video_processor` builds ``Kimi_K25VideoProcessor`` from a spec's video fields; the
tokenizer also splits digit runs in threes (the Kimi tokenizer's regex) and knows every timestamp
piece and the word ``video`` (:data:`kimi_k25_plugin.video_spec.TEXT_PIECES`), so a video's
expansion text tokenizes as under the real tokenizer's split, with other ids.
"""

from __future__ import annotations

import ast
import math
import os
from typing import Any

RESAMPLE = {"pil_lanczos": 1, "pil_bilinear": 2, "pil_bicubic": 3}
MEDIA_TOKENS = {"<|media_begin|>": 163602, "<|media_content|>": 163603, "<|media_end|>": 163604,
                "<|kimi_k25_video_placeholder|>": 163840}
# The Kimi K2 chat template's turn markers (ids not verifiable offline; they only shape the prompt).
CHAT_TOKENS = {"<|im_end|>": 163586, "<|im_user|>": 163587, "<|im_assistant|>": 163588, "<|im_middle|>": 163601}
WORDS = ("user", "assistant", "What", "is", "in", "this", "image", "?", "and", "compare", "them", ".", "x")


def reference_navit_resize():
    """transformers' own ``navit_resize``, taken from its source file without importing it
    (the module imports torch): the sizing parity test runs in every venv."""
    import transformers

    path = os.path.join(os.path.dirname(transformers.__file__), "models", "kimi_k25", "image_processing_kimi_k25.py")
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "navit_resize")
    scope: dict[str, Any] = {"math": math}
    exec(compile(ast.Module([node], type_ignores=[]), path, "exec"), scope)
    return scope["navit_resize"]


def image_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    """``Kimi_K25ImageProcessor``'s arguments for ``spec``."""
    side = spec["max_size_per_side"]
    return {
        "do_resize": True, "size": {"max_height": side, "max_width": side}, "resample": RESAMPLE[spec["resample"]],
        "max_patches": spec["max_patches"], "patch_size": spec["patch_size"], "merge_size": spec["merge_size"],
        "do_rescale": spec["do_rescale"], "rescale_factor": spec["rescale_factor"],
        "do_normalize": spec["do_normalize"], "image_mean": spec["image_mean"], "image_std": spec["image_std"],
        "do_convert_rgb": True,
    }


def image_processor(spec: dict[str, Any]):
    """The reference image processor of ``spec``."""
    import transformers

    return transformers.Kimi_K25ImageProcessor(**image_kwargs(spec))


def tokenizer(spec: dict[str, Any]):
    """A fast tokenizer holding ``spec``'s ``<|media_pad|>`` id, the media and chat markers and
    :data:`WORDS` (word-level, split at whitespace and punctuation; anything else is ``<unk>``)."""
    from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from kimi_k25_plugin.video_spec import TEXT_PIECES

    special = {"<|media_pad|>": spec["image_token_id"], **MEDIA_TOKENS, **CHAT_TOKENS}
    taken = set(special.values())
    free = (i for i in range(1, 1 << 31) if i not in taken)
    vocab = {"<unk>": 0, **special, **{w: next(free) for w in WORDS}}
    vocab.update({p: next(free) for p in TEXT_PIECES if p not in vocab})
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{N}{1,3}"), behavior="isolated"), pre_tokenizers.Whitespace()])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def processor(spec: dict[str, Any]):
    """``Kimi_K25Processor`` over :func:`image_processor` and :func:`tokenizer`."""
    import transformers

    return transformers.Kimi_K25Processor(image_processor=image_processor(spec), tokenizer=tokenizer(spec),
                                          video_processor=video_processor(spec))


def video_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    """``Kimi_K25VideoProcessor``'s arguments for ``spec``'s video fields (the class defaults where
    the spec has none)."""
    if spec.get("video_token_id") is None:
        return {}
    side = spec["video_max_size_per_side"]
    kw = {
        "do_resize": True, "size": {"max_height": side, "max_width": side},
        "resample": RESAMPLE[spec["video_resample"]], "max_patches": spec["video_max_patches"],
        "patch_size": spec["patch_size"], "merge_size": spec["merge_size"],
        "temporal_patch_size": spec["temporal_patch_size"], "do_sample_frames": spec["video_sample_frames"],
        "do_rescale": spec["do_rescale"], "rescale_factor": spec["rescale_factor"],
        "do_normalize": spec["do_normalize"], "image_mean": spec["image_mean"], "image_std": spec["image_std"],
        "do_convert_rgb": True,
    }
    if spec["video_sample_frames"]:
        kw["fps"] = spec["video_fps"]
    return kw


def video_processor(spec: dict[str, Any]):
    import transformers

    return transformers.Kimi_K25VideoProcessor(**video_kwargs(spec))


def text_ids(spec: dict[str, Any]) -> dict[str, list[int]]:
    """``video_text_token_ids`` of the test tokenizer (each piece encoded alone)."""
    from kimi_k25_plugin import video_text_token_ids

    tok = tokenizer(spec)
    return video_text_token_ids(lambda text: tok(text, add_special_tokens=False)["input_ids"])
