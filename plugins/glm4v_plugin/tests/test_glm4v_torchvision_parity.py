"""Live parity of the ``torchvision`` backend with transformers' ``Glm4vImageProcessor`` and
``Glm46VImageProcessor`` (ATen's uint8 antialiased bicubic, the fused rescale + normalize).
Needs torch and torchvision (the torchvision stage of CI). The live PIL test's images and
specs with ``backend: "torchvision"``, its prompts through the processors, a batch (the
processor groups images by shape), and the two backends giving different bytes, so a
spec's backend is never silently ignored.
"""

from __future__ import annotations

import pytest

from . import glm4v_images as images
from .test_glm4v_live_parity import (
    BATCH, CASES, PROMPTS, SPECS, assert_batch_equals_reference, assert_item_equals_reference,
    assert_prompt_equals_processor, ours,
)
from mm_framework.testing import require_torchvision

require_torchvision()
pytest.importorskip("transformers")

TV_SPECS = {name: {**spec, "backend": "torchvision"} for name, spec in SPECS.items()}


@pytest.mark.parametrize(("spec_name", "name"), CASES, ids=[f"{s}-{n}" for s, n in CASES])
def test_pixel_values_and_grid_equal_the_reference(spec_name, name):
    assert_item_equals_reference(spec_name, TV_SPECS[spec_name], name)


def test_a_batch_equals_the_reference():
    assert_batch_equals_reference(TV_SPECS["preset"], BATCH)


@pytest.mark.parametrize("model", ["glm4v", "glm46v"])
@pytest.mark.parametrize("text", PROMPTS[:2], ids=["prompt0", "prompt1"])
def test_prompt_expansion_equals_the_processor(text, model):
    assert_prompt_equals_processor(TV_SPECS["preset" if model == "glm4v" else "glm46v"], model, text)


def test_the_pil_and_torchvision_backends_differ():
    data = [images.make("page_letter_100dpi_850x1100.jpg")]
    pil = ours(SPECS["preset"], data)[1].items[0].feature.array
    tv = ours(TV_SPECS["preset"], data)[1].items[0].feature.array
    assert pil.shape == tv.shape and pil.tobytes() != tv.tobytes()
