"""Live parity of the ``torchvision`` backend with transformers' ``MiniCPMV4_6ImageProcessor``
(tvF.resize of uint8 tensors, ATen's uint8 antialiased bicubic; frames grouped by shape for
the fused rescale + normalize; ``reshape_by_patch`` through ``unfold``).

Needs torch and torchvision (the torchvision stage of CI). ``pixel_values`` and
``target_sizes`` equal the processor's exactly on the live PIL test's images and specs with
``backend: "torchvision"`` (bilinear only where torchvision takes ATen's uint8 path), a
multi-image prompt, the size sweep, and a full prompt through the processor.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from mm_framework.testing import require_torchvision

require_torchvision()

from . import minicpmv4_6_images, minicpmv4_6_reference  # noqa: E402
from .test_minicpmv4_6_live_parity import CASES, IMG, SIDES, SPECS, SWEEP, assert_same, ours, reference  # noqa: E402
import mm_framework as mmf  # noqa: E402

from torchvision.transforms.v2.functional import _geometry  # noqa: E402

Image = pytest.importorskip("PIL.Image")

TV_SPECS = {name: {**spec, "backend": "torchvision"} for name, spec in SPECS.items()}
BILINEAR_U8 = _geometry._do_native_uint8_resize_on_cpu(_geometry.InterpolationMode.BILINEAR)


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixels_equal_the_reference(spec_name, name):
    spec = TV_SPECS[spec_name]
    if spec["resample"] == "pil_bilinear" and not BILINEAR_U8:
        pytest.skip("torchvision resizes uint8 bilinear through float32 on this CPU")
    data = minicpmv4_6_images.make(name)
    assert_same(ours(spec, [data]), reference(spec, [data]), name)


def test_images_of_one_prompt_concatenate_like_the_reference():
    spec = TV_SPECS["preset"]
    names = ("budget_448x448.png", "wide_1000x300.jpg", "tiny_10x10.png", "rgb_1280x960.jpg", "budget_448x448.png")
    datas = [minicpmv4_6_images.make(n) for n in names]
    assert_same(ours(spec, datas), reference(spec, datas), "five images")


@pytest.mark.parametrize("mode", ["16x", "4x"])
def test_size_sweep_equals_the_reference(mode):
    spec = {**SWEEP, "backend": "torchvision", "downsample_mode": mode}
    rng = np.random.default_rng(11)
    for w in SIDES:
        for h in SIDES:
            img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
            buf = io.BytesIO()
            img.save(buf, "PNG")
            assert_same(ours(spec, [buf.getvalue()]), reference(spec, [img]), f"{w}x{h}")


def test_prompt_equals_the_processor():
    spec = TV_SPECS["preset"]
    proc = minicpmv4_6_reference.processor(spec)
    assert type(proc.image_processor).__name__ == "MiniCPMV4_6ImageProcessor"
    text = f"\n{IMG}\n\n{IMG} and {IMG}\n"
    images = [minicpmv4_6_images.make(n) for n in ("rgb_1280x960.jpg", "thin_tall_20x3000.png", "tiny_10x10.png")]
    ref = proc(text=[text], images=[Image.open(io.BytesIO(d)) for d in images], return_tensors="np")
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, text=text), tokenize=lambda t: proc.tokenizer(t)["input_ids"])
    assert np.asarray(out.input_ids).tolist() == ref["input_ids"][0].tolist()
    assert_same(pipe.model_kwargs(out), ref, text)
