"""Live parity with transformers' ``Kimi_K25Processor`` and ``Kimi_K25ImageProcessor`` (torchvision
only: tvF.resize of uint8 tensors with antialias, zero pad, fused float32 rescale + normalize).

Needs torch and torchvision (the torchvision stage of CI); skipped cleanly elsewhere. The
BILINEAR variant needs torchvision's ATen uint8 bilinear path (AVX2/AVX512, ARM), and is
skipped on its own elsewhere. ``pixel_values`` (float32, compared as bytes), ``image_grid_thw``
and the prompt equal the reference's on the image table under every option, a size sweep,
one prompt of several images, per-item options and the handoff to torch.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import kimi_k25_images, kimi_k25_reference
import mm_framework as mmf
from mm_framework.testing import require_torchvision

require_torchvision()
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision.transforms.v2.functional import _geometry  # noqa: E402

PRESET = mmf.preset("kimi_k2_5")
CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
SPECS = {
    "preset": PRESET,
    "max_patches_256": {**PRESET, "max_patches": 256},
    "side_32": {**PRESET, "max_size_per_side": 32},
    "bilinear": {**PRESET, "resample": "pil_bilinear"},
    "lanczos": {**PRESET, "resample": "pil_lanczos"},
    "rescale_only": {**PRESET, "do_normalize": False},
    "normalize_only": {**PRESET, "do_rescale": False},
    "clip_norm": {**PRESET, **CLIP},
    "patch_16_merge_3": {**PRESET, "patch_size": 16, "merge_size": 3, "max_patches": 900},
}
NAMES = [n for n in kimi_k25_images.IMAGES if n not in ("png16_gray_640x480.png", "large_4000x3000.jpg")]
CASES = [("preset", n) for n in NAMES] + [
    (s, n) for s in SPECS if s != "preset"
    for n in ("tiny_10x10.png", "past_kernel_29x57.png", "rgb_640x480.jpg", "tall_400x2000.jpg", "strip_600x1.png",
              "palette_P_500x375.png", "capped_8000x20.png")]
SIDES = (1, 5, 14, 27, 28, 29, 111, 335, 500, 673, 1009)


def reference(spec, images, **kwargs):
    if spec["resample"] == "pil_bilinear" and not _geometry._do_native_uint8_resize_on_cpu(
            _geometry.InterpolationMode.BILINEAR):
        pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU (not cloned)")
    ip = kimi_k25_reference.image_processor(spec)
    pil = [Image.open(io.BytesIO(d)) if isinstance(d, bytes) else d for d in images]
    return ip(pil, return_tensors="pt", **kwargs)


def ours(spec, images):
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, input_ids=[spec["image_token_id"]] * len(images)))
    return out, pipe.model_kwargs(out)


def assert_same(out, kwargs, ref, what):
    want = ref["pixel_values"].numpy()
    got = kwargs["pixel_values"]
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), \
        f"{what}: {np.count_nonzero(got.view(np.uint32) != want.view(np.uint32))} values differ"
    assert np.array_equal(kwargs["image_grid_thw"], ref["image_grid_thw"].numpy()), what
    assert [[it.geometry.t, it.geometry.h, it.geometry.w] for it in out.items] == ref["image_grid_thw"].tolist()


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = SPECS[spec_name]
    data = kimi_k25_images.make(name)
    assert_same(*ours(spec, [data]), reference(spec, [data]), name)


def test_size_sweep_equals_the_reference():
    spec = {**PRESET, "max_patches": 300}
    rng = np.random.default_rng(11)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            assert_same(*ours(spec, [buf.getvalue()]), reference(spec, [img]), f"{w}x{h}")


def test_prompt_and_model_kwargs_equal_the_processor():
    """Several images in one prompt (the reference groups and reorders them by shape)."""
    proc = kimi_k25_reference.processor(PRESET)
    media = "<|media_begin|>image<|media_content|><|media_pad|><|media_end|>"
    text = (f"<|im_user|>user<|im_middle|>{media}What is in this image? {media} and {media}{media}<|im_end|>"
            "<|im_assistant|>assistant<|im_middle|>")
    names = ("rgb_640x480.jpg", "capped_20x8000.png", "tiny_10x10.png", "rgb_640x480.jpg")
    images = [kimi_k25_images.make(n) for n in names]
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="pt",
               add_special_tokens=False)
    assert sorted(ref) == ["attention_mask", "image_grid_thw", "input_ids", "pixel_values"]
    pipe = mmf.pipeline_from_spec(PRESET)
    tokenize = lambda t: proc.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=tokenize)
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()
    kwargs = pipe.model_kwargs(out)
    assert np.array_equal(kwargs["pixel_values"], ref["pixel_values"].numpy())
    assert np.array_equal(kwargs["image_grid_thw"], ref["image_grid_thw"].numpy())
    handed = out.model_kwargs(as_torch=True)
    assert handed["pixel_values"].dtype == torch.float32 and torch.equal(handed["pixel_values"], ref["pixel_values"])
    counts = proc._get_num_multimodal_tokens(image_sizes=[Image.open(io.BytesIO(d)).size[::-1] for d in images])
    assert [e - s + 1 for s, e in out.offsets] == counts["num_image_tokens"]
    assert int((ref["input_ids"][0] == PRESET["image_token_id"]).sum()) == sum(counts["num_image_tokens"])


@pytest.mark.parametrize("options", [{"max_patches": 100}, {"max_patches": 1}, {"max_patches": 5000}])
def test_item_options_equal_the_call_kwargs(options):
    data = kimi_k25_images.make("rgb_1280x960.jpg")
    pipe = mmf.pipeline_from_spec(PRESET)
    out = pipe.process(mmf.MmInput(images=[mmf.Image(data, **options)], input_ids=[PRESET["image_token_id"]]))
    assert_same(out, pipe.model_kwargs(out), reference(PRESET, [data], **options), str(options))
