"""transformers' MiniCPM-V 4.6 processor built offline (test support, also for the golden
generator).

The image processor comes from explicit arguments (the spec's; the preset's are the class
defaults, docs/families/minicpmv4_6.md §1). The hub is unreachable and the real tokenizer is
not installed, so the tokenizer is built here with the ``tokenizers`` library: a word-level
vocabulary whose special tokens (``<|image_pad|>``, ``<image>``, ``</image>``, ``<slice>``,
``</slice>``, ``<image_id>``, ``</image_id>``), digits (split one per token, as Qwen's
pre-tokenizer does) and ``"\\n"`` carry the spec's ids. Everything the processor adds to a
prompt is made of those tokens, so the expanded ids are the real tokenizer's wherever the
prompt's own text is; text words are a small vocabulary.
"""

from __future__ import annotations

from typing import Any

RESAMPLE = {"pil_lanczos": 1, "pil_bilinear": 2, "pil_bicubic": 3}
WORDS = ("User", "Assistant", ":", "What", "is", "in", "this", "image", "?", "and", "compare", "them", ".", "x")
MARKERS = {"image_start_token": ("<image>", "image_start_token_id"),
           "image_end_token": ("</image>", "image_end_token_id"),
           "slice_start_token": ("<slice>", "slice_start_token_id"),
           "slice_end_token": ("</slice>", "slice_end_token_id"),
           "image_id_start_token": ("<image_id>", "image_id_start_token_id"),
           "image_id_end_token": ("</image_id>", "image_id_end_token_id")}
IMAGE_TOKEN, VIDEO_TOKEN = "<|image_pad|>", "<|video_pad|>"
OPTIONS = ("max_slice_nums", "scale_resolution", "patch_size", "slice_mode", "downsample_mode", "use_image_id",
           "do_rescale", "rescale_factor", "do_normalize", "image_mean", "image_std")


def image_processor(spec: dict[str, Any]):
    """The reference image processor of ``spec`` on its backend."""
    import transformers

    cls = "MiniCPMV4_6ImageProcessor" + ("Pil" if spec.get("backend", "pil") == "pil" else "")
    return getattr(transformers, cls)(resample=RESAMPLE[spec["resample"]], do_resize=True, do_convert_rgb=True,
                                      **{k: spec[k] for k in OPTIONS})


def tokenizer(spec: dict[str, Any]):
    """A fast tokenizer holding ``spec``'s marker, digit and newline ids and :data:`WORDS`."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    special = {IMAGE_TOKEN: spec["image_token_id"], **{text: spec[key] for text, key in MARKERS.values()}}
    taken = set(special.values()) | {spec["newline_token_id"], *spec["digit_token_ids"], spec.get("video_token_id")}
    free = (i for i in range(1, 1 << 31) if i not in taken)
    special[VIDEO_TOKEN] = spec["video_token_id"] if spec.get("video_token_id") is not None else next(free)
    special["<|im_start|>"] = next(free)
    special["<|im_end|>"] = next(free)
    special["<|endoftext|>"] = next(free)
    vocab = {"<unk>": 0, **special, "\n": spec["newline_token_id"],
             **{str(d): i for d, i in enumerate(spec["digit_token_ids"])}, **{w: next(free) for w in WORDS}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(),
                                                 pre_tokenizers.Digits(individual_digits=True)])
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    tok.add_tokens([AddedToken("\n", normalized=False)])
    for t, i in vocab.items():
        assert tok.token_to_id(t) == i, (t, i, tok.token_to_id(t))
    extra = {"image_token": IMAGE_TOKEN, "video_token": VIDEO_TOKEN,
             **{attr: text for attr, (text, _) in MARKERS.items()}}
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<|endoftext|>",
                                   extra_special_tokens=extra)


class _VideoStandIn:
    """What the processor's ``__init__`` reads from a video processor (image calls never use
    it): the torchvision-only ``MiniCPMV4_6VideoProcessor`` cannot load in the PIL venv."""

    slice_mode = True
    downsample_mode = "16x"


def processor(spec: dict[str, Any]):
    """``MiniCPMV4_6Processor`` over :func:`image_processor` and :func:`tokenizer`."""
    import transformers

    class ImageOnly(transformers.MiniCPMV4_6Processor):
        def check_argument_for_proper_class(self, argument_name, argument):
            if argument_name != "video_processor":
                return super().check_argument_for_proper_class(argument_name, argument)
            return None

    return ImageOnly(image_processor=image_processor(spec), video_processor=_VideoStandIn(), tokenizer=tokenizer(spec))


VIDEO_OPTIONS = {"video_max_num_frames": "max_num_frames", "video_stack_frames": "stack_frames",
                 "video_slice_mode": "slice_mode",
                 "video_max_slice_nums": "max_slice_nums", "video_scale_resolution": "scale_resolution",
                 "video_downsample_mode": "downsample_mode"}


def video_processor(spec: dict[str, Any]):
    """The reference ``MiniCPMV4_6VideoProcessor`` of ``spec`` (torch and torchvision only)."""
    import transformers

    shared = {k: spec[k] for k in ("patch_size", "use_image_id", "do_rescale", "rescale_factor", "do_normalize",
                                   "image_mean", "image_std")}
    return transformers.MiniCPMV4_6VideoProcessor(
        resample=RESAMPLE[spec["resample"]], do_resize=True, do_convert_rgb=True,
        **shared, **{theirs: spec[ours] for ours, theirs in VIDEO_OPTIONS.items()})


def video_capable_processor(spec: dict[str, Any]):
    """``MiniCPMV4_6Processor`` with the real video processor (torch and torchvision only)."""
    import transformers

    return transformers.MiniCPMV4_6Processor(image_processor=image_processor(spec),
                                             video_processor=video_processor(spec), tokenizer=tokenizer(spec))


def make_clip(frames: int, width: int, height: int, fps: int, seed: int) -> bytes:
    """A short mpeg4 clip in MP4 (PyAV): smooth gradients plus noise, so every resize shows."""
    import numpy as np

    from mm_framework.testing.images import mp4

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    clip = []
    for t in range(frames):
        img = np.stack([(x * 255 // max(width - 1, 1) + 9 * t) % 256, (y * 255 // max(height - 1, 1)) % 256,
                        ((x + y + 20 * t) % 256)], axis=-1).astype(np.int16)
        clip.append(np.clip(img + rng.integers(-6, 7, img.shape), 0, 255).astype(np.uint8))
    return mp4(np.stack(clip), fps)
