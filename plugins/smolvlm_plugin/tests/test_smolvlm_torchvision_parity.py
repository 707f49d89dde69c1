"""Live parity of the ``torchvision`` backend with transformers' ``SmolVLMImageProcessor`` and
``Idefics3ImageProcessor`` (tvF.resize of uint8 tensors, the fused rescale + normalize).

Needs torch and torchvision (the torchvision stage of CI). The published configs resize with
LANCZOS, which torchvision >= 0.27 runs on CPU through ATen's uint8 Lanczos
(``aten_u8_lanczos``). Pixels and mask equal the processor's exactly on the live PIL test's
images and specs with ``backend: "torchvision"``, a multi-image prompt (the processor groups
and reorders images by shape), the size sweep, and a full prompt through the processor.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import smolvlm_images, smolvlm_reference
from .test_smolvlm_live_parity import CASES, PROMPTS, SIDES, SPECS, SWEEP, assert_same, ours, reference
import mm_framework as mmf

torch = pytest.importorskip("torch", reason="the torchvision backend's reference needs torch")
geometry = pytest.importorskip("torchvision.transforms.v2.functional._geometry",
                               reason="the torchvision backend's reference needs torchvision")
transformers = pytest.importorskip("transformers")
Image = pytest.importorskip("PIL.Image")

TV_SPECS = {name: {**spec, "backend": "torchvision"} for name, spec in SPECS.items()}
# bilinear takes ATen's uint8 path only on AVX2/AVX512 and ARM (elsewhere float32, not cloned).
BILINEAR_U8 = geometry._do_native_uint8_resize_on_cpu(geometry.InterpolationMode.BILINEAR)


def _skip_unless_cloned(spec):
    if spec["resample"] == "pil_bilinear" and not BILINEAR_U8:
        pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU")


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = TV_SPECS[spec_name]
    _skip_unless_cloned(spec)
    data = smolvlm_images.make(name)
    assert_same(ours(spec, [data]), reference(spec, [data]), name)


def test_images_of_one_prompt_group_and_reorder_like_the_reference():
    spec = TV_SPECS["idefics3"]
    names = ("tile_512x512.png", "wide_1000x300.jpg", "tiny_10x10.png", "rgb_640x480.jpg", "tile_512x512.png")
    datas = [smolvlm_images.make(n) for n in names]
    assert_same(ours(spec, datas), reference(spec, datas), "five images")


@pytest.mark.parametrize("split", [True, False])
def test_size_sweep_equals_the_reference(split):
    spec = {**SWEEP, "backend": "torchvision", "do_image_splitting": split}
    rng = np.random.default_rng(11)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            assert_same(ours(spec, [buf.getvalue()]), reference(spec, [img]), f"{w}x{h}")


@pytest.mark.parametrize("variant", ["smolvlm", "idefics3"])
def test_prompt_equals_the_processor(variant):
    spec = TV_SPECS[variant]
    proc = smolvlm_reference.processor(spec)
    assert type(proc.image_processor).__name__.endswith("ImageProcessor")
    text = PROMPTS[3]
    images = [smolvlm_images.make(n) for n in ("rgb_640x480.jpg", "thin_tall_20x3000.png", "tiny_10x10.png")]
    ref = proc(text=[text], images=[[Image.open(io.BytesIO(d)) for d in images]], return_tensors="np",
               add_special_tokens=False)
    pipe = mmf.pipeline_from_spec(spec)
    tokenize = lambda t: proc.tokenizer(t, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=tokenize)
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()
    assert_same(pipe.model_kwargs(out), ref, text)
