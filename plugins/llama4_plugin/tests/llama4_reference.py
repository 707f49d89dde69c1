"""transformers' Llama4Processor built offline (test support, also for the golden generator).

The image processor comes from explicit arguments equal to the published
``preprocessor_config.json`` of meta-llama/Llama-4-Scout-17B-16E-Instruct (docs/families/llama4.md
§1). The hub is unreachable and the real tokenizer is not installed, so the tokenizer is built
here with the ``tokenizers`` library: a word-level vocabulary whose special tokens (the six the
processor writes, and the chat template's ``<|begin_of_text|>``, ``<|header_start|>``,
``<|header_end|>``, ``<|eot|>``) carry the published ids. Everything the processor adds to a
prompt is made of those tokens, so the expanded ids are the real tokenizer's wherever the
prompt's own text is; text words are a small vocabulary.
"""

from __future__ import annotations

from typing import Any

# preprocessor_config.json of Llama-4-Scout-17B-16E-Instruct (Maverick's is the same).
IMAGE_CONFIG: dict[str, Any] = {
    "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "max_patches": 16, "resample": 2,
    "rescale_factor": 0.00392156862745098, "resize_to_max_canvas": False, "size": {"height": 336, "width": 336},
}
RESAMPLE = {"pil_lanczos": 1, "pil_bilinear": 2, "pil_bicubic": 3}
# The chat template's own special tokens (the Llama 4 tokenizer's ids).
CHAT_TOKENS = {"<|begin_of_text|>": 200000, "<|header_start|>": 200005, "<|header_end|>": 200006, "<|eot|>": 200008}
WORDS = ("user", "assistant", "What", "is", "in", "this", "image", "?", "and", "compare", "them", ".", "x")


def published_spec() -> dict[str, Any]:
    """The llama4 spec of the published files (what the goldens pin)."""
    ip = IMAGE_CONFIG
    return {
        "family": "llama4", "image_token_id": 200090, "image_start_token_id": 200080, "image_end_token_id": 200081,
        "patch_token_id": 200092, "tile_x_separator_token_id": 200084, "tile_y_separator_token_id": 200085,
        "tile_size": ip["size"]["height"], "max_patches": ip["max_patches"], "patch_size": 14,
        "pixel_shuffle_ratio": 0.5, "rescale_factor": ip["rescale_factor"], "image_mean": ip["image_mean"],
        "image_std": ip["image_std"], "resample": "pil_bilinear", "resize_to_max_canvas": ip["resize_to_max_canvas"],
        "do_rescale": ip["do_rescale"], "do_normalize": ip["do_normalize"], "alpha": "composite",
        "exif_transpose": False,
    }


def image_processor(spec: dict[str, Any]):
    """The reference image processor of ``spec``."""
    import transformers

    side = spec["tile_size"]
    return transformers.Llama4ImageProcessor(
        do_resize=True, size={"height": side, "width": side}, resample=RESAMPLE[spec["resample"]],
        max_patches=spec["max_patches"], resize_to_max_canvas=spec["resize_to_max_canvas"],
        do_rescale=spec["do_rescale"], rescale_factor=spec["rescale_factor"], do_normalize=spec["do_normalize"],
        image_mean=spec["image_mean"], image_std=spec["image_std"], do_convert_rgb=True,
    )


def tokenizer(spec: dict[str, Any]):
    """A fast tokenizer holding ``spec``'s marker ids, the chat tokens and :data:`WORDS`
    (word-level, split at whitespace and punctuation; anything else is ``<unk>``)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {"<|image|>": spec["image_token_id"], "<|image_start|>": spec["image_start_token_id"],
               "<|image_end|>": spec["image_end_token_id"], "<|patch|>": spec["patch_token_id"],
               "<|tile_x_separator|>": spec["tile_x_separator_token_id"],
               "<|tile_y_separator|>": spec["tile_y_separator_token_id"], **CHAT_TOKENS}
    taken = set(special.values())
    free = (i for i in range(1, 1 << 31) if i not in taken)
    vocab = {"<unk>": 0, **special, **{w: next(free) for w in WORDS}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<|begin_of_text|>")


def processor(spec: dict[str, Any]):
    """``Llama4Processor`` over :func:`image_processor` and :func:`tokenizer`."""
    import transformers

    return transformers.Llama4Processor(image_processor=image_processor(spec), tokenizer=tokenizer(spec),
                                        patch_size=spec["patch_size"],
                                        pixel_shuffle_ratio=spec["pixel_shuffle_ratio"])
