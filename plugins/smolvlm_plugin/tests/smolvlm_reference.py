"""transformers' SmolVLM and Idefics3 processors built offline (test support, also for the
golden generator).

The image processors come from explicit arguments equal to the published
``preprocessor_config.json`` / ``processor_config.json`` of HuggingFaceTB/SmolVLM-256M-Instruct
and HuggingFaceM4/Idefics3-8B-Llama3 (docs/families/smolvlm.md §1, with where each value is
from). The hub is unreachable and neither real tokenizer is installed, so the tokenizer is
built here with the ``tokenizers`` library: a word-level vocabulary whose special tokens
(``<fake_token_around_image>``, ``<image>``, ``<global-img>``, ``<row_r_col_c>``,
``<end_of_utterance>``) and newline runs (``"\\n"``, ``"\\n\\n"``) carry the preset's ids.
Everything the processors add to a prompt is made of those tokens, so the expanded ids are
the real tokenizer's wherever the prompt's own text is; text words are a small vocabulary.
"""

from __future__ import annotations

from typing import Any

# The image processors' published configs (the repositories' preprocessor_config.json; SmolVLM2's
# also holds video_sampling, which images ignore).
_SMOLVLM = {
    "do_convert_rgb": True, "do_image_splitting": True, "do_normalize": True, "do_pad": True,
    "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
    "max_image_size": {"longest_edge": 512}, "resample": 1, "rescale_factor": 1 / 255,
    "size": {"longest_edge": 2048},
}
IMAGE_CONFIGS: dict[str, dict[str, Any]] = {
    "smolvlm_256m_instruct": _SMOLVLM,
    "smolvlm2_500m_video_instruct": _SMOLVLM,
    "idefics3_8b_llama3": {
        "do_convert_rgb": True, "do_image_splitting": True, "do_normalize": True, "do_pad": True,
        "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "max_image_size": {"longest_edge": 364}, "resample": 1, "rescale_factor": 1 / 255,
        "size": {"longest_edge": 1456},
    },
}
# processor_config.json's image_seq_len.
IMAGE_SEQ_LEN = {"smolvlm_256m_instruct": 64, "smolvlm2_500m_video_instruct": 64, "idefics3_8b_llama3": 169}
# processor_config.json's processor_class: SmolVLM (v1) was published with the Idefics3 classes.
VARIANT = {"smolvlm_256m_instruct": "idefics3", "smolvlm2_500m_video_instruct": "smolvlm",
           "idefics3_8b_llama3": "idefics3"}
# The published tokenizers' ids of the tokens the processors add (tokenizer.json's
# added_tokens; "\n" and "\n\n" are byte-level BPE entries of both vocabularies):
# <fake_token_around_image>, <image>, <global-img>, <row_1_col_1> (the 36 markers run
# row-major from it), "\n", "\n\n".
MODEL_TOKENS = {
    "smolvlm_256m_instruct": {"fake": 49189, "image": 49190, "global": 49152, "row_col": 49153, "nl": 198, "nl2": 216},
    "smolvlm2_500m_video_instruct": {"fake": 49189, "image": 49190, "global": 49152, "row_col": 49153, "nl": 198,
                                     "nl2": 216},
    "idefics3_8b_llama3": {"fake": 128256, "image": 128257, "global": 128259, "row_col": 128260, "nl": 198,
                           "nl2": 271},
}


def published_spec(preset: str) -> dict[str, Any]:
    """The full smolvlm spec of ``preset`` from the values above (what the goldens pin)."""
    ip, t = IMAGE_CONFIGS[preset], MODEL_TOKENS[preset]
    return {
        "family": "smolvlm", "variant": VARIANT[preset], "image_token_id": t["image"],
        "fake_image_token_id": t["fake"], "global_image_token_id": t["global"],
        "row_col_token_ids": [[t["row_col"] + 6 * r + c for c in range(6)] for r in range(6)],
        "newline_token_id": t["nl"], "double_newline_ids": [t["nl2"]], "image_seq_len": IMAGE_SEQ_LEN[preset],
        "size_longest_edge": ip["size"]["longest_edge"], "max_image_size": ip["max_image_size"]["longest_edge"],
        "rescale_factor": ip["rescale_factor"], "image_mean": ip["image_mean"], "image_std": ip["image_std"],
        "backend": "pil", "resample": {1: "pil_lanczos"}[ip["resample"]], "do_resize": ip["do_resize"],
        "do_image_splitting": ip["do_image_splitting"], "do_rescale": ip["do_rescale"],
        "do_normalize": ip["do_normalize"], "alpha": "composite", "exif_transpose": False,
    }
RESAMPLE = {"pil_lanczos": 1, "pil_bilinear": 2, "pil_bicubic": 3}
WORDS = ("User", "Assistant", ":", "What", "is", "in", "this", "image", "?", "and", "compare", "them", ".",
         "x")


def image_processor(spec: dict[str, Any]):
    """The reference image processor of ``spec`` (its variant's class, on its backend)."""
    import transformers

    cls = {"smolvlm": "SmolVLMImageProcessor", "idefics3": "Idefics3ImageProcessor"}[spec["variant"]]
    if spec.get("backend", "pil") == "pil":
        cls += "Pil"
    return getattr(transformers, cls)(
        do_resize=spec["do_resize"], size={"longest_edge": spec["size_longest_edge"]},
        resample=RESAMPLE[spec["resample"]], do_image_splitting=spec["do_image_splitting"],
        max_image_size={"longest_edge": spec["max_image_size"]}, do_rescale=spec["do_rescale"],
        rescale_factor=spec["rescale_factor"], do_normalize=spec["do_normalize"], image_mean=spec["image_mean"],
        image_std=spec["image_std"], do_pad=True, do_convert_rgb=True,
    )


def tokenizer(spec: dict[str, Any]):
    """A fast tokenizer holding ``spec``'s marker ids, its newline runs and :data:`WORDS`
    (word-level, split at whitespace and punctuation; anything else is ``<unk>``)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {"<fake_token_around_image>": spec["fake_image_token_id"], "<image>": spec["image_token_id"],
               "<global-img>": spec["global_image_token_id"]}
    for r, row in enumerate(spec["row_col_token_ids"]):
        for c, i in enumerate(row):
            special[f"<row_{r + 1}_col_{c + 1}>"] = i
    if spec.get("video_token_id") is not None:
        special["<video>"] = spec["video_token_id"]
    taken = set(special.values()) | {spec["newline_token_id"], *spec["double_newline_ids"]}
    free = (i for i in range(1, 1 << 31) if i not in taken)
    special["<end_of_utterance>"] = next(free)
    special["<|im_start|>"] = next(free)
    vocab = {"<unk>": 0, **special, "\n": spec["newline_token_id"], **{w: next(free) for w in WORDS}}
    if len(spec["double_newline_ids"]) == 1:
        vocab["\n\n"] = spec["double_newline_ids"][0]
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    # Newline runs are added tokens, matched longest first, so "\n\n" is one token as in both
    # published byte-level BPE vocabularies (ids 216 and 271).
    tok.add_tokens([AddedToken(t, normalized=False) for t in ("\n", "\n\n") if t in vocab])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>")


def processor(spec: dict[str, Any]):
    """The variant's processor over :func:`image_processor` and :func:`tokenizer`."""
    import transformers

    ip, tok = image_processor(spec), tokenizer(spec)
    if spec["variant"] == "idefics3":
        return transformers.Idefics3Processor(image_processor=ip, tokenizer=tok, image_seq_len=spec["image_seq_len"])
    # SmolVLMProcessor refuses to start without num2words, which it uses only for video
    # prompts (frame counts in words); image prompts never reach it.
    from transformers.models.smolvlm import processing_smolvlm

    processing_smolvlm.num2words = processing_smolvlm.num2words or str
    try:
        video = transformers.SmolVLMVideoProcessor()
        cls = transformers.SmolVLMProcessor
    except ImportError:
        video, cls = None, _image_only_class()
    return cls(image_processor=ip, tokenizer=tok, video_processor=video, image_seq_len=spec["image_seq_len"])


def _image_only_class():
    import transformers

    class ImageOnly(transformers.SmolVLMProcessor):
        """SmolVLMProcessor without a video processor: that class needs torchvision, which
        the README venv lacks; image calls never touch it."""

        def check_argument_for_proper_class(self, argument_name, argument):
            if argument_name != "video_processor":
                return super().check_argument_for_proper_class(argument_name, argument)
            return None

    return ImageOnly



def video_processor(spec: dict[str, Any]):
    """The reference ``SmolVLMVideoProcessor`` (torchvision only) of ``spec``'s video fields,
    built as ``from_pretrained`` builds it from a ``preprocessor_config.json`` whose
    ``video_sampling`` holds ``video_fps`` and ``video_num_frames``."""
    import transformers

    size = spec.get("video_size_longest_edge") or spec["size_longest_edge"]
    return transformers.SmolVLMVideoProcessor(
        size={"longest_edge": size}, max_image_size={"longest_edge": spec["max_image_size"]},
        resample=RESAMPLE[spec["resample"]], do_rescale=spec["do_rescale"], rescale_factor=spec["rescale_factor"],
        do_normalize=spec["do_normalize"], image_mean=spec["image_mean"], image_std=spec["image_std"],
        do_sample_frames=spec.get("video_do_sample_frames", False), do_pad=True, do_convert_rgb=True,
        video_sampling={"fps": spec.get("video_fps", 1.0), "max_frames": spec.get("video_num_frames", 64),
                        "video_size": {"longest_edge": size}},
    )


def video_processing(spec: dict[str, Any]):
    """``SmolVLMProcessor`` over the image processor, :func:`video_processor` and
    :func:`tokenizer` (needs num2words, the reference's own dependency)."""
    import transformers

    return transformers.SmolVLMProcessor(image_processor=image_processor(spec), tokenizer=tokenizer(spec),
                                         video_processor=video_processor(spec), image_seq_len=spec["image_seq_len"])
