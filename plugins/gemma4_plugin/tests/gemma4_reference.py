"""transformers' Gemma 4 processor built offline (test support, also for the golden generator).

The image processor comes from explicit arguments equal to the spec (the preset's are
Gemma4ImageProcessorPil's class defaults, docs/families/gemma4.md §1). The hub is unreachable
and the Gemma 4 tokenizer is not installed, so the tokenizer is built here with the
``tokenizers`` library: a word-level vocabulary whose image, boi and eoi tokens carry the
spec's ids (the audio markers, which ``Gemma4Processor`` insists exist, take free ids).
The processor adds nothing to a prompt but ``boi image* eoi`` for each image token, so the
expanded ids are the real tokenizer's wherever the prompt's own text is. The token strings
are Gemma 4's as we know them; only their ids matter to the ids compared.
"""

from __future__ import annotations

from typing import Any

RESAMPLE = {"pil_lanczos": 1, "pil_bilinear": 2, "pil_bicubic": 3}
IMAGE, BOI, EOI = "<|image|>", "<|image>", "<image|>"
AUDIO, BOA, EOA = "<|audio|>", "<|audio>", "<audio|>"
WORDS = ("<bos>", "<|turn>", "<turn|>", "user", "model", "Describe", "this", "image", ".", "Compare", "and",
         "first", "second", ":", "Which", "is", "wider", "?", "x")
IMAGE_KEYS = ("patch_size", "max_soft_tokens", "pooling_kernel_size")


def image_processor(spec: dict[str, Any]):
    """The reference image processor of ``spec`` on its backend."""
    import transformers

    cls = "Gemma4ImageProcessor" + ("Pil" if spec.get("backend", "pil") == "pil" else "")
    return getattr(transformers, cls)(
        resample=RESAMPLE[spec["resample"]], do_rescale=spec["do_rescale"], rescale_factor=spec["rescale_factor"],
        do_normalize=spec["do_normalize"], image_mean=list(spec["image_mean"]), image_std=list(spec["image_std"]),
        do_resize=True, do_convert_rgb=True, **{k: spec[k] for k in IMAGE_KEYS},
    )


def tokenizer(spec: dict[str, Any]):
    """A fast tokenizer holding the image, boi and eoi tokens at the spec's ids, the audio
    markers, a pad token (the processor pads text), ``"\\n"`` and :data:`WORDS` (word-level,
    split at whitespace and punctuation; anything else is ``<unk>``)."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    taken = {spec["image_token_id"], spec["boi_token_id"], spec["eoi_token_id"]}
    free = (i for i in range(1, 1 << 31) if i not in taken)
    special = {IMAGE: spec["image_token_id"], BOI: spec["boi_token_id"], EOI: spec["eoi_token_id"],
               AUDIO: next(free), BOA: next(free), EOA: next(free), "<bos>": next(free), "<|turn>": next(free),
               "<turn|>": next(free), "<pad>": next(free)}
    vocab = {"<unk>": 0, **special, "\n": next(free), **{w: next(free) for w in WORDS if w not in special}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.add_tokens([AddedToken("\n", normalized=False)])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", extra_special_tokens={
        "image_token": IMAGE, "boi_token": BOI, "eoi_token": EOI, "audio_token": AUDIO, "boa_token": BOA,
        "eoa_token": EOA})


def processor(spec: dict[str, Any]):
    """``Gemma4Processor`` over :func:`image_processor` and :func:`tokenizer`, images only.

    Its video processor needs torchvision, absent from the PIL reference's environment, and
    an image request never touches it, so the argument check alone is relaxed for ``None``
    there; the audio feature extractor is the real (default) one."""
    import transformers

    class ImagesOnly(transformers.Gemma4Processor):
        def check_argument_for_proper_class(self, argument_name, argument):
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    return ImagesOnly(feature_extractor=transformers.Gemma4AudioFeatureExtractor(),
                      image_processor=image_processor(spec), tokenizer=tokenizer(spec), video_processor=None)


def image_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    """The images options a processor call needs to use ``spec``'s values."""
    return {k: spec[k] for k in IMAGE_KEYS}


VIDEO = "<|video|>"
VIDEO_KEYS = {"video_max_soft_tokens": "max_soft_tokens", "video_num_frames": "num_frames", "video_fps": "fps",
              "video_do_sample_frames": "do_sample_frames", "video_do_rescale": "do_rescale",
              "video_rescale_factor": "rescale_factor", "video_do_normalize": "do_normalize",
              "video_image_mean": "image_mean", "video_image_std": "image_std"}


def video_processor(spec: dict[str, Any]):
    """The reference ``Gemma4VideoProcessor`` (torchvision only) of ``spec``'s video fields."""
    import transformers

    kw = {theirs: spec[ours] for ours, theirs in VIDEO_KEYS.items()}
    return transformers.Gemma4VideoProcessor(resample=RESAMPLE[spec["video_resample"]], patch_size=spec["patch_size"],
                                             pooling_kernel_size=spec["pooling_kernel_size"], **kw)


def video_tokenizer(spec: dict[str, Any]):
    """A fast tokenizer shaped like Gemma's where a timestamp meets the markers: spaces
    normalised to ``"▁"``, one token per character (no merges; Gemma's vocabulary has no
    multi-digit token), the digits, ``":"`` and ``"▁"`` at the spec's ``timestamp_token_ids``,
    and the image, boi, eoi, video (and audio) markers at their ids."""
    from tokenizers import AddedToken, Tokenizer, models, normalizers
    from transformers import PreTrainedTokenizerFast

    stamps = {("▁" if k == " " else k): v for k, v in spec["timestamp_token_ids"].items()}
    taken = {spec["image_token_id"], spec["boi_token_id"], spec["eoi_token_id"], spec["video_token_id"],
             *stamps.values()}
    free = (i for i in range(1, 1 << 31) if i not in taken)
    special = {IMAGE: spec["image_token_id"], BOI: spec["boi_token_id"], EOI: spec["eoi_token_id"],
               VIDEO: spec["video_token_id"], AUDIO: next(free), BOA: next(free), EOA: next(free),
               "<bos>": next(free), "<pad>": next(free)}
    chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.?,\n"
    vocab = {"<unk>": 0, **special, **stamps, **{c: next(free) for c in chars}}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", extra_special_tokens={
        "image_token": IMAGE, "boi_token": BOI, "eoi_token": EOI, "audio_token": AUDIO, "boa_token": BOA,
        "eoa_token": EOA})


def video_processing(spec: dict[str, Any]):
    """The full ``Gemma4Processor`` (images on ``spec``'s backend, videos, :func:`video_tokenizer`)."""
    import transformers

    return transformers.Gemma4Processor(feature_extractor=transformers.Gemma4AudioFeatureExtractor(),
                                        image_processor=image_processor(spec), tokenizer=video_tokenizer(spec),
                                        video_processor=video_processor(spec))
