"""Live parity of the ``torchvision`` backend with transformers' ``Gemma4ImageProcessor``.

Needs torch and torchvision (the torchvision stage of CI). Every output key
(``pixel_values``, ``image_position_ids``, ``num_soft_tokens_per_image``) equals the
processor's exactly, on the live PIL test's images and specs with ``backend: "torchvision"``
(bicubic, bilinear and Lanczos through ATen's uint8 antialiased resize; rescale as
``uint8 * f32(r)``, or torchvision's fused rescale + normalize), and on a multi-image batch.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from . import gemma4_images
from .test_gemma4_live_parity import IMAGES, SPECS, assert_outputs_equal, family, ours, reference_outputs
import mm_framework as mmf
from mm_framework.testing import require_torchvision

require_torchvision(uint8_bilinear=True)
Image = pytest.importorskip("PIL.Image")

TV_SPECS = {name: {**spec, "backend": "torchvision"} for name, spec in SPECS.items()}
TV_SPECS["preset"] = mmf.preset("gemma4_torchvision")
CASES = [(s, n) for s in TV_SPECS for n in IMAGES]


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_image_outputs_equal_the_reference(spec_name, name):
    spec = TV_SPECS[spec_name]
    data = gemma4_images.make(name)
    want = reference_outputs(spec, Image.open(io.BytesIO(data)))
    _, out = ours(spec, [data])
    assert_outputs_equal(want, family(spec).mm_hf_image_outputs(out.items))


def test_a_batch_equals_the_reference():
    spec = TV_SPECS["preset"]
    names = ["wide_1000x300.jpg", "rgb_640x480.jpg", "line_1x700.png", "tall_400x2000.jpg", "rgb_640x480.jpg"]
    datas = [gemma4_images.make(n) for n in names]
    want = reference_outputs(spec, [Image.open(io.BytesIO(d)) for d in datas])
    _, out = ours(spec, datas)
    assert_outputs_equal(want, family(spec).mm_hf_image_outputs(out.items))


def test_the_pil_and_torchvision_backends_differ():
    # Same filter, different fixed point: the backend must change bytes.
    data = gemma4_images.make("rgb_1280x960.jpg")
    pil = ours(SPECS["preset"], [data])[1].items[0].feature.array
    tv = ours(TV_SPECS["preset"], [data])[1].items[0].feature.array
    assert pil.shape == tv.shape and not np.array_equal(pil, tv)
