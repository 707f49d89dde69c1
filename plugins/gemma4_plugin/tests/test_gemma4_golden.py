"""What the golden replay (test_gemma4_conformance.py, which compares transformers'
intermediate stages too) does not compare: the rejections, the preset the generator copies,
target sizes and soft-token counts, probe values and the model kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from . import gemma4_images
import mm_framework as mmf
from gemma4_plugin import Gemma4Family
from mm_framework.testing import assert_rejection, digest, load_cases, load_module, probe, run_case

from .test_gemma4_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")
generator = load_module(GOLDEN.parent.parent / "generate_gemma4_goldens.py", "generate_gemma4_goldens")


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for image in gemma4_images.IMAGES:
        assert f"gemma4-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 71 and len(REJECTED) == 1


def test_the_generator_copies_the_preset():
    assert generator.PRESET == mmf.preset("gemma4")
    pil_object = [c for c in ACCEPTED if c.doc["provenance"]["entry"] == "pil_object"]
    assert all(c.doc["spec"] == mmf.preset("gemma4") for c in pil_object if c.name.startswith("gemma4-"))


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, gemma4_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_sizes_probes_and_model_kwargs(case):
    spec, extra = case.doc["spec"], case.doc["gemma4"]
    family = Gemma4Family({k: v for k, v in spec.items() if k != "family"})
    pipe, out = run_case(case, gemma4_images.make)
    for item, want in zip(out.items, extra["items"], strict=True):
        assert list(family.target(*item.size)) == want["resized_hw"][::-1]
        assert family.soft_tokens(item.geometry) == want["num_soft_tokens"]
        n = item.geometry.h * item.geometry.w
        assert probe(item.feature.array, len(want["probe"]), n * family.spec.patch_dim).tolist() == want["probe"]
    kwargs = family.mm_hf_image_outputs(out.items)
    assert kwargs["num_soft_tokens_per_image"].tolist() == extra["model_kwargs"]["num_soft_tokens_per_image"]
    for key in ("pixel_values", "image_position_ids"):
        want = extra["model_kwargs"][key]
        assert list(kwargs[key].shape) == want["shape"] and digest(kwargs[key]) == want["blake3"], key
    assert sorted(pipe.model_kwargs(out)) == ["image_position_ids", "pixel_values"]


def test_one_image_hf_outputs_are_a_view_of_its_feature():
    """The hf adapter's call owns its items' features (its pipelines keep no cache): one image's
    ``pixel_values`` are a read-only view of its already padded feature, not a copy; the pipeline's
    model kwargs and several images' outputs are new arrays with the same values."""
    case = next(c for c in ACCEPTED if len(c.doc["gemma4"]["items"]) == 1)
    family = Gemma4Family({k: v for k, v in case.doc["spec"].items() if k != "family"})
    pipe, out = run_case(case, gemma4_images.make)
    feature = out.items[0].feature.array
    one = family.mm_hf_image_outputs(out.items)["pixel_values"]
    assert np.shares_memory(one, feature) and not one.flags.writeable
    assert one.shape == (1, *feature.shape) and np.array_equal(one[0], feature)
    kwargs = pipe.model_kwargs(out)["pixel_values"]
    assert not np.shares_memory(kwargs, feature) and np.array_equal(kwargs, one)
    two = family.mm_hf_image_outputs([out.items[0], out.items[0]])["pixel_values"]
    assert not np.shares_memory(two, feature) and np.array_equal(two, np.concatenate([one, one]))
