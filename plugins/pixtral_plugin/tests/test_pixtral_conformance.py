"""The mm_framework conformance suite on pixtral, replaying the transformers goldens.

``TestPixtral12bConformance`` runs every harness check on the ``pixtral_12b`` preset and
replays each accepted golden case (``golden/cases``, written from transformers 5.24's
``PixtralProcessor`` by ``generate_pixtral_goldens.py``; both presets, every image) through
the harness, which also compares the recorded decoded and resized images
(``pixtral_stages``), then checks what the harness does not: the padded model kwargs, the
pixel-free token count, the processor's own count and the stored ``pixel_values`` blobs.
``TestMistralSmall31Conformance`` runs the checks on the Mistral 3 preset
(spatial merge 2), ``TestMistralSmall31TorchvisionConformance`` on it with the torchvision
backend. No check is declared as an expected failure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.kernels import resize_rgb
from mm_framework.testing import FamilyConformance, golden
from pixtral_plugin import PixtralFamily

from . import pixtral_images

GOLDEN = Path(__file__).parent / "golden"
OPTIONAL = frozenset({"backend", "alpha", "exif_transpose", "pixels"})


@pytest.fixture(scope="module")
def blobs():
    with np.load(GOLDEN / "blobs.npz") as z:
        return {k: z[k] for k in z.files}


def pixtral_stages(pipe: mmf.Pipeline, inp: mmf.MmInput) -> dict[str, np.ndarray]:
    """The decoded RGB and the resized image of each item (the reference's stages)."""
    family = PixtralFamily({k: v for k, v in pipe.spec.items() if k != "family"})
    out = {}
    for i, rgb in enumerate(golden.decoded_images(pipe, inp)):
        out[f"decoded_rgb[{i}]"] = rgb
        h, w = family.resized(rgb.shape[1], rgb.shape[0])
        out[f"resized_u8[{i}]"] = resize_rgb(rgb, w, h, "pil_bicubic")
    return out


def check_family_extras(case: golden.GoldenCase, out: mmf.Output, blobs: dict) -> None:
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    extra = case.doc["pixtral"]
    for i, item in enumerate(extra["items"]):
        h, w = item["decoded_shape"][:2]
        span = out.offsets[i][1] - out.offsets[i][0] + 1
        # The span stops before [IMG_END]; the processor's replacement includes it.
        assert pipe.num_media_tokens(w, h) == span == item["tokens"] - 1
        if h not in (1, 3):  # transformers' count misreads those heights (docs/families/pixtral.md §6)
            assert extra["num_image_tokens"][i] == item["tokens"]
        full = blobs.get(f"{case.name}/pixel_values[{i}]")
        feature = out.items[i].feature.array
        if full is not None:
            np.testing.assert_array_equal(feature, full)
        else:
            flat = feature.reshape(-1)
            np.testing.assert_array_equal(flat[:: max(1, flat.size // 512)], blobs[f"{case.name}/sample[{i}]"])
    kwargs = out.model_kwargs()
    want = extra["model_kwargs"]
    assert kwargs["image_sizes"].dtype == np.int64 and kwargs["image_sizes"].tolist() == want["image_sizes"]
    pv = kwargs["pixel_values"]
    assert pv.dtype == np.float32 and list(pv.shape) == want["pixel_values"]["shape"]
    assert golden.digest(pv) == want["pixel_values"]["blake3"]


class TestPixtral12bConformance(FamilyConformance):
    optional_fields = OPTIONAL
    golden_dir = GOLDEN / "cases"

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("pixtral_12b")

    @pytest.fixture
    def golden_image_source(self):
        return pixtral_images.make

    @pytest.fixture
    def golden_stages(self):
        return pixtral_stages

    def test_golden_case(self, golden_case, golden_image_source, golden_stages, mm_update_goldens, blobs):
        out = golden.replay_case(
            golden_case, mmf.pipeline_from_spec, source=golden_image_source, stages=golden_stages,
            update=mm_update_goldens,
        )
        check_family_extras(golden_case, out, blobs)


class TestMistralSmall31Conformance(FamilyConformance):
    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return mmf.preset("mistral_small_3_1")


class TestMistralSmall31TorchvisionConformance(FamilyConformance):
    """The torchvision backend through the same checks (its parity is the live tests')."""

    optional_fields = OPTIONAL

    @pytest.fixture
    def family_spec(self):
        return {**mmf.preset("mistral_small_3_1"), "backend": "torchvision"}
