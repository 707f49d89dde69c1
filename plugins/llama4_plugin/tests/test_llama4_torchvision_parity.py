"""Live parity with transformers' ``Llama4Processor`` and ``Llama4ImageProcessor`` (torchvision
only: tvF.resize of uint8 tensors with antialias, bfloat16 rescale + normalize).

Needs torch and torchvision (the torchvision stage of CI); skipped cleanly elsewhere. The
published config resizes BILINEAR, which torchvision runs on ATen's uint8 kernel only on
AVX2/AVX512 and ARM CPUs (elsewhere through float32, not cloned): skipped there too.
``pixel_values`` (bfloat16 bits, compared as bits), the grid and the prompt equal the
reference's on the image table under every option, a size sweep, one prompt of several
images, per-item options and the handoff to torch.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import llama4_images, llama4_reference
import mm_framework as mmf
from mm_framework.testing import require_torchvision

require_torchvision(uint8_bilinear=True)
import torch  # noqa: E402
from PIL import Image  # noqa: E402

PRESET = llama4_reference.published_spec()
CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
SPECS = {
    "preset": PRESET,
    "max_canvas": {**PRESET, "resize_to_max_canvas": True},
    "max_patches_6": {**PRESET, "max_patches": 6},
    "bicubic": {**PRESET, "resample": "pil_bicubic"},
    "lanczos": {**PRESET, "resample": "pil_lanczos"},
    "rescale_only": {**PRESET, "do_normalize": False},
    "clip_norm": {**PRESET, **CLIP},
    "tile_112": {**PRESET, "tile_size": 112, "max_patches": 10},
}
NAMES = [n for n in llama4_images.IMAGES if n not in ("png16_gray_640x480.png", "large_4000x3000.jpg")]
CASES = [("preset", n) for n in NAMES] + [
    (s, n) for s in SPECS if s != "preset"
    for n in ("tiny_10x10.png", "past_tile_337x336.png", "rgb_640x480.jpg", "tall_400x2000.jpg", "strip_600x1.png",
              "palette_P_500x375.png")]
SIDES = (1, 5, 111, 335, 336, 337, 500, 671, 673, 1009)


def bits(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        return t.contiguous().view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def reference(spec, images, **kwargs):
    ip = llama4_reference.image_processor(spec)
    pil = [Image.open(io.BytesIO(d)) if isinstance(d, bytes) else d for d in images]
    return ip(pil, return_tensors="pt", **kwargs)


def ours(spec, images):
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, input_ids=[spec["image_token_id"]] * len(images)))
    return out, pipe.model_kwargs(out)


def assert_same(spec, out, kwargs, ref, what):
    want = bits(ref["pixel_values"])
    got = kwargs["pixel_values"]
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    assert np.array_equal(got, want), f"{what}: {np.count_nonzero(got != want)} values differ"
    grids = [[it.geometry.rows, it.geometry.cols] for it in out.items]
    assert grids == ref["aspect_ratios"].tolist(), what


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = SPECS[spec_name]
    data = llama4_images.make(name)
    assert_same(spec, *ours(spec, [data]), reference(spec, [data]), name)


def test_size_sweep_equals_the_reference():
    spec = {**PRESET, "max_patches": 6}
    rng = np.random.default_rng(11)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            assert_same(spec, *ours(spec, [buf.getvalue()]), reference(spec, [img]), f"{w}x{h}")


def test_prompt_and_model_kwargs_equal_the_processor():
    """Several images in one prompt (the reference groups and reorders them by shape)."""
    proc = llama4_reference.processor(PRESET)
    text = ("<|header_start|>user<|header_end|>\n\n<|image|>What is in this image? <|image|> and <|image|>"
            "<|image|><|eot|><|header_start|>assistant<|header_end|>\n\n")
    names = ("rgb_640x480.jpg", "thin_tall_20x3000.png", "tiny_10x10.png", "rgb_640x480.jpg")
    images = [llama4_images.make(n) for n in names]
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="pt",
               add_special_tokens=False)
    assert sorted(ref) == ["attention_mask", "input_ids", "pixel_values"]
    pipe = mmf.pipeline_from_spec(PRESET)
    tokenize = lambda t: proc.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=tokenize)
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()
    assert np.array_equal(pipe.model_kwargs(out)["pixel_values"], bits(ref["pixel_values"]))
    handed = out.model_kwargs(as_torch=True)["pixel_values"]
    assert handed.dtype == torch.bfloat16 and torch.equal(handed, ref["pixel_values"])
    # 144 <|patch|> per frame: (336 // 14) ** 2 // 4.
    frames = sum(it.feature.shape[0] for it in out.items)
    assert int((ref["input_ids"][0] == PRESET["patch_token_id"]).sum()) == 144 * frames


@pytest.mark.parametrize("options", [{"max_patches": 3}, {"resize_to_max_canvas": True},
                                     {"max_patches": 1, "resize_to_max_canvas": True}])
def test_item_options_equal_the_call_kwargs(options):
    data = llama4_images.make("rgb_1280x960.jpg")
    pipe = mmf.pipeline_from_spec(PRESET)
    out = pipe.process(mmf.MmInput(images=[mmf.Image(data, **options)], input_ids=[PRESET["image_token_id"]]))
    assert_same(PRESET, out, pipe.model_kwargs(out), reference(PRESET, [data], **options), str(options))


def test_rescale_off_is_refused_by_both():
    data = llama4_images.make("rgb_640x480.jpg")
    with pytest.raises(TypeError, match="should be a float tensor"):
        reference({**PRESET, "do_rescale": False}, [data])
    with pytest.raises(mmf.SpecError, match="do_rescale"):
        mmf.pipeline_from_spec({**PRESET, "do_rescale": False})
