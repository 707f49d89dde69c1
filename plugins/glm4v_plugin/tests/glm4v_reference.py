"""transformers' GLM-4V processors built offline from a spec (test support for the live
tests and the golden generator; needs transformers, and torch for torchvision and positions).

The image processors come from explicit arguments (the hub is unreachable). The processor's
tokenizer is a small one built here: ``Glm4vProcessor`` reads only its ``<|image|>``,
``<|video|>``, ``<|begin_of_video|>`` and ``<|end_of_video|>`` ids and retokenizes the
expanded text, so a vocabulary holding those at the spec's ids, the image markers and the
chat template's role tokens at their GLM-4 ids and a few words gives the processor's
expansion for prompts made of them (the real GLM-4 vocabularies are not available offline).
"""

from __future__ import annotations

from typing import Any

IMAGE_START, IMAGE_TOKEN, IMAGE_END = "<|begin_of_image|>", "<|image|>", "<|end_of_image|>"
# image_token_id -> the video token's id in the same vocabulary (GLM-4-0414's and GLM-4.5's).
VIDEO_IDS = {151343: 151344, 151363: 151364}
# The tokens the chat template writes around an image, at their ids in both vocabularies.
MARKERS = {"[gMASK]": 151331, "<sop>": 151333, "<|user|>": 151336, "<|assistant|>": 151337, IMAGE_START: 151339,
           IMAGE_END: 151340, "<|begin_of_video|>": 151341, "<|end_of_video|>": 151342}
WORDS = {"<unk>": 0, "Describe": 5, "this": 6, "image.": 7, "\n": 8, " ": 9}
CLASSES = {("pil", "glm4v"): "Glm4vImageProcessorPil", ("torchvision", "glm4v"): "Glm4vImageProcessor",
           ("pil", "glm46v"): "Glm46VImageProcessorPil", ("torchvision", "glm46v"): "Glm46VImageProcessor"}
PROCESSORS = {"glm4v": "Glm4vProcessor", "glm46v": "Glm46VProcessor"}
VIDEO_CLASSES = {"glm4v": "Glm4vVideoProcessor", "glm46v": "Glm46VVideoProcessor"}


def image_processor(spec: dict[str, Any], model: str = "glm4v"):
    """The spec's image processor (the GLM-4.1V/4.5V class, or GLM-4.6V's), every argument explicit."""
    import transformers

    return getattr(transformers, CLASSES[spec.get("backend", "pil"), model])(
        size={"shortest_edge": spec["min_pixels"], "longest_edge": spec["max_pixels"]},
        patch_size=spec["patch_size"], merge_size=spec["merge_size"],
        temporal_patch_size=spec["temporal_patch_size"], image_mean=spec["image_mean"], image_std=spec["image_std"],
        resample=3, do_resize=True, do_rescale=True, rescale_factor=1 / 255, do_normalize=True, do_convert_rgb=True,
    )


def specials(image_token_id: int) -> dict[str, int]:
    return {**MARKERS, IMAGE_TOKEN: image_token_id, "<|video|>": VIDEO_IDS[image_token_id]}


def tokenizer(image_token_id: int):
    import transformers
    from tokenizers import AddedToken

    table = specials(image_token_id)
    tok = transformers.LlamaTokenizer(vocab={**WORDS, **table}, merges=[], extra_special_tokens={
        "image_token": IMAGE_TOKEN, "video_token": "<|video|>"})
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in table], special_tokens=True)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in WORDS if t != "<unk>"])
    assert tok.image_token_id == image_token_id, tok.image_token_id
    return tok


def processor(spec: dict[str, Any], tok=None, model: str = "glm4v"):
    """The model's processor over :func:`image_processor` and :func:`tokenizer` (with its
    video processor where torchvision imports: image calls never touch it)."""
    import transformers

    cls = getattr(transformers, PROCESSORS[model])
    try:
        video = getattr(transformers, VIDEO_CLASSES[model])()
    except ImportError:
        video, cls = None, _image_only(cls)
    return cls(image_processor=image_processor(spec, model), tokenizer=tok or tokenizer(spec["image_token_id"]),
               video_processor=video)


def _image_only(base):
    class ImageOnly(base):
        """The processor without its video processor, which needs torchvision (absent from
        the main venv)."""

        def check_argument_for_proper_class(self, argument_name, argument):
            if argument_name != "video_processor":
                return super().check_argument_for_proper_class(argument_name, argument)
            return None

    return ImageOnly


def token_ids(tok, text: str) -> list[int]:
    return [int(i) for i in tok(text, add_special_tokens=False)["input_ids"]]


def rope_fn(merge_size: int):
    """``Glm4vModel.get_rope_index`` for a vision tower merging ``merge_size`` x
    ``merge_size`` patches, called without building a model (needs torch)."""
    import types

    import transformers

    model_cls = transformers.Glm4vModel
    config = transformers.Glm4vConfig(vision_config={"spatial_merge_size": merge_size})
    self = types.SimpleNamespace(config=config)
    self.get_vision_position_ids = types.MethodType(model_cls.get_vision_position_ids, self)
    return lambda **kw: model_cls.get_rope_index(self, **kw)


# Text tokens of the video timestamps for the video tests' tokenizer: digits one by one,
# but "12" merged, as a BPE may merge digit groups (docs/families/glm4v.md §7).
STAMP_WORDS = {**{str(d): 20 + d for d in range(10)}, ".": 30, " seconds": 31, "12": 32, "video.": 33}


def video_tokenizer(image_token_id: int):
    """:func:`tokenizer` with the timestamp text's tokens too."""
    import transformers
    from tokenizers import AddedToken

    table = specials(image_token_id)
    words = {**WORDS, **STAMP_WORDS}
    tok = transformers.LlamaTokenizer(vocab={**words, **table}, merges=[], extra_special_tokens={
        "image_token": IMAGE_TOKEN, "video_token": "<|video|>"})
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in table], special_tokens=True)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in words if t != "<unk>"])
    return tok


def stamp_ids(tok, texts) -> dict[str, list[int]]:
    """The spec's ``video_timestamp_ids`` for ``texts`` as ``tok`` encodes each alone."""
    return {t: token_ids(tok, t) for t in texts}


def video_processor(spec: dict[str, Any], model: str = "glm4v"):
    """The spec's video processor (GLM-4.1V's class or GLM-4.6V's), every argument explicit."""
    import transformers

    return getattr(transformers, VIDEO_CLASSES[model])(
        size={"shortest_edge": spec["video_min_pixels"], "longest_edge": spec["video_max_pixels"]},
        patch_size=spec["patch_size"], merge_size=spec["merge_size"], temporal_patch_size=spec["temporal_patch_size"],
        image_mean=spec["image_mean"], image_std=spec["image_std"], fps=spec["video_fps"],
        max_duration=spec["video_max_duration"], do_sample_frames=True, resample=3, do_resize=True, do_rescale=True,
        rescale_factor=1 / 255, do_normalize=True, do_convert_rgb=True,
    )


def video_processor_full(spec: dict[str, Any], tok, model: str = "glm4v"):
    """The model's processor with :func:`video_processor` (needs torchvision)."""
    import transformers

    return getattr(transformers, PROCESSORS[model])(image_processor=image_processor(spec, model), tokenizer=tok,
                                                    video_processor=video_processor(spec, model))
