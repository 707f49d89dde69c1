"""transformers' PaddleOCR-VL processors built offline from a spec (test support for the
live tests and the golden generator; needs transformers, and torch for torchvision).

The image processors come from explicit arguments (the hub is unreachable). The processor's
tokenizer is a small one built here: PaddleOCRVLProcessor reads only its ``image_token`` and
``image_token_id`` and retokenizes the expanded text, so a vocabulary holding the image
token at PaddleOCRVLConfig's ``image_token_id`` (100295), the markers around it and a few
words gives the processor's expansion for prompts made of them (the other ids are this
vocabulary's own; the real ERNIE-4.5 one is not available offline).
"""

from __future__ import annotations

from typing import Any

IMAGE_START, IMAGE_TOKEN, IMAGE_END = "<|IMAGE_START|>", "<|IMAGE_PLACEHOLDER|>", "<|IMAGE_END|>"
# The tokens the chat template writes around an image, and a few others.
SPECIALS = {"<unk>": 0, "<s>": 1, "</s>": 2, "<|begin_of_sentence|>": 100273, IMAGE_START: 101305,
            IMAGE_TOKEN: 100295, IMAGE_END: 101306}
WORDS = {"User:": 5, "Assistant:": 6, "OCR:": 7, "\n": 8, " ": 9}
CLASSES = {"pil": "PaddleOCRVLImageProcessorPil", "torchvision": "PaddleOCRVLImageProcessor"}


def image_processor(spec: dict[str, Any]):
    """The spec's image processor, every argument explicit."""
    import transformers

    return getattr(transformers, CLASSES[spec.get("backend", "pil")])(
        size={"shortest_edge": spec["min_pixels"], "longest_edge": spec["max_pixels"]},
        patch_size=spec["patch_size"], merge_size=spec["merge_size"],
        temporal_patch_size=spec["temporal_patch_size"], image_mean=spec["image_mean"], image_std=spec["image_std"],
        resample=3, do_resize=True, do_rescale=True, rescale_factor=1 / 255, do_normalize=True, do_convert_rgb=True,
    )


def tokenizer():
    import transformers
    from tokenizers import AddedToken

    tok = transformers.LlamaTokenizer(vocab={**SPECIALS, **WORDS}, merges=[], extra_special_tokens={
        "image_token": IMAGE_TOKEN})
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS], special_tokens=True)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in WORDS])
    assert tok.image_token_id == SPECIALS[IMAGE_TOKEN], tok.image_token_id
    return tok


def processor(spec: dict[str, Any], tok=None):
    import transformers

    return transformers.PaddleOCRVLProcessor(image_processor=image_processor(spec), tokenizer=tok or tokenizer())


def token_ids(tok, text: str) -> list[int]:
    return [int(i) for i in tok(text, add_special_tokens=False)["input_ids"]]


def rope_fn(merge_size: int):
    """``PaddleOCRVLModel.get_rope_index`` for a vision tower merging ``merge_size`` x
    ``merge_size`` patches, called without building a model (needs torch)."""
    import types

    import transformers

    model_cls = transformers.PaddleOCRVLModel
    config = transformers.PaddleOCRVLConfig(vision_config={"spatial_merge_size": merge_size})
    self = types.SimpleNamespace(config=config)
    self.get_vision_position_ids = types.MethodType(model_cls.get_vision_position_ids, self)
    return lambda **kw: model_cls.get_rope_index(self, **kw)
