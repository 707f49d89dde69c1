"""transformers' DeepSeek-OCR-2 processor built offline (test support, also for the golden
generator).

The image processors come from explicit arguments equal to the spec (the preset's are
DeepseekOcr2ImageProcessorPil's class defaults, docs/families/deepseek_ocr2.md §1). The hub
is unreachable and DeepSeek's tokenizer is not installed, so the tokenizer is built here
with the ``tokenizers`` library: a word-level vocabulary whose ``<image>`` carries the
spec's ``image_token_id``. The processor adds nothing to a prompt but ``<image>`` runs, so
the expanded ids are the real tokenizer's wherever the prompt's own text is.
"""

from __future__ import annotations

from typing import Any

RESAMPLE = {"pil_lanczos": 1, "pil_bilinear": 2, "pil_bicubic": 3}
WORDS = ("<|grounding|>", "Convert", "the", "document", "to", "markdown", ".", "Free", "OCR", "and", "compare",
         "them", "x")


def image_processor(spec: dict[str, Any]):
    """The reference image processor of ``spec`` on its backend."""
    import transformers

    cls = "DeepseekOcr2ImageProcessor" + ("Pil" if spec.get("backend", "pil") == "pil" else "")
    return getattr(transformers, cls)(
        size={"height": spec["size"], "width": spec["size"]}, tile_size=spec["tile_size"],
        resample=RESAMPLE[spec["resample"]], crop_to_patches=spec["crop_to_patches"],
        min_patches=spec["min_patches"], max_patches=spec["max_patches"],
        background_color=list(spec["background_color"]), do_rescale=spec["do_rescale"],
        rescale_factor=spec["rescale_factor"], do_normalize=spec["do_normalize"], image_mean=spec["image_mean"],
        image_std=spec["image_std"], do_resize=True, do_convert_rgb=True,
    )


def image_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    """The call options the processor needs to use ``spec``'s crop settings (it overrides its
    image processor's with its own ``images_kwargs`` defaults otherwise)."""
    return {k: spec[k] for k in ("crop_to_patches", "min_patches", "max_patches")}


def tokenizer(spec: dict[str, Any]):
    """A fast tokenizer holding ``<image>`` at the spec's id, ``"\\n"`` and :data:`WORDS`
    (word-level, split at whitespace and punctuation; anything else is ``<unk>``)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    image = spec["image_token_id"]
    free = (i for i in range(1, 1 << 31) if i != image)
    special = {"<image>": image, "<|grounding|>": next(free)}
    vocab = {"<unk>": 0, **special, "\n": next(free), **{w: next(free) for w in WORDS if w not in special}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.add_tokens([AddedToken("\n", normalized=False)])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def processor(spec: dict[str, Any]):
    """``DeepseekOcr2Processor`` over :func:`image_processor` and :func:`tokenizer`."""
    import transformers

    return transformers.DeepseekOcr2Processor(image_processor=image_processor(spec), tokenizer=tokenizer(spec),
                                              patch_size=spec["patch_size"],
                                              downsample_ratio=spec["downsample_ratio"])
