"""Live parity of the ``torchvision`` backend with transformers' ``DeepseekOcr2ImageProcessor``
(tvF.resize of uint8 tensors, tvF.pad with the fill, the fused rescale + normalize).

Needs torch and torchvision (the torchvision stage of CI). Pixels equal the processor's
exactly on the live PIL test's images and specs with ``backend: "torchvision"``, a
multi-image prompt (the processor groups and reorders images by shape), the size sweep,
and full prompts through the processor.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from mm_framework.testing import require_torchvision

require_torchvision()

from . import deepseek_ocr2_images, deepseek_ocr2_reference  # noqa: E402
from .test_deepseek_ocr2_live_parity import (  # noqa: E402
    CASES, OPTIONS, PRESET, PROMPT_IMAGES, PROMPTS, SIDES, SPECS, SWEEP, IMG, assert_same, check, ours, reference,
)
import mm_framework as mmf  # noqa: E402
from torchvision.transforms.v2.functional import _geometry  # noqa: E402

Image = pytest.importorskip("PIL.Image")

TV_SPECS = {name: {**spec, "backend": "torchvision"} for name, spec in SPECS.items()}
# bilinear takes ATen's uint8 path only on AVX2/AVX512 and ARM (elsewhere float32, not cloned).
BILINEAR_U8 = _geometry._do_native_uint8_resize_on_cpu(_geometry.InterpolationMode.BILINEAR)


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = TV_SPECS[spec_name]
    if spec["resample"] == "pil_bilinear" and not BILINEAR_U8:
        pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU")
    data = deepseek_ocr2_images.make(name)
    check(spec, data, data, name)


def test_images_of_one_prompt_group_and_reorder_like_the_reference():
    spec = TV_SPECS["preset"]
    names = ("above_tile_769x769.png", "wide_1000x300.jpg", "tiny_10x10.png", "rgb_1280x960.jpg",
             "above_tile_769x769.png")
    datas = [deepseek_ocr2_images.make(n) for n in names]
    assert_same(ours(spec, datas), reference(spec, datas), "five images")


@pytest.mark.parametrize("crop", [True, False])
def test_size_sweep_equals_the_reference(crop):
    spec = {**SWEEP, "backend": "torchvision", "crop_to_patches": crop}
    rng = np.random.default_rng(11)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            check(spec, buf.getvalue(), img, f"{w}x{h}")


@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_prompt_equals_the_processor(options):
    spec = TV_SPECS["preset"]
    proc = deepseek_ocr2_reference.processor(spec)
    assert type(proc.image_processor).__name__ == "DeepseekOcr2ImageProcessor"
    text = PROMPTS[3]
    images = [deepseek_ocr2_images.make(n) for n in PROMPT_IMAGES[:text.count(IMG)]]
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np",
               add_special_tokens=False, **options)
    pipe = mmf.pipeline_from_spec(spec)
    tokenize = lambda t: proc.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = pipe.process(mmf.MmInput(images=images, text=text, options=options), tokenize=tokenize)
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()
    assert_same(pipe.model_kwargs(out), ref, text)
    assert PRESET["image_token_id"] in ref["input_ids"][0]
