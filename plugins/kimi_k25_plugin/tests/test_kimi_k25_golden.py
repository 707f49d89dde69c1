"""What the golden replay (test_kimi_k25_conformance.py, which compares transformers' stages
too) does not compare: the matrix, the pinned preset, the rejections, probe values and the
model kwargs."""

from __future__ import annotations

import numpy as np
import pytest
from blake3 import blake3

from . import kimi_k25_images
import mm_framework as mmf
from mm_framework.testing import load_cases

from .test_kimi_k25_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")


def _digest(a: np.ndarray) -> str:
    return blake3(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for image in kimi_k25_images.IMAGES:
        assert f"kimi_k25-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 99 and len(REJECTED) == 1
    assert {c.doc["provenance"]["variant"] for c in ACCEPTED} == {
        "preset", "_max_patches_256", "_side_32", "_bilinear", "_lanczos", "_rescale_only", "_normalize_only",
        "_clip_norm", "_patch_16_merge_3"}
    assert {c.doc["provenance"]["transformers"] for c in ACCEPTED} == {"5.24.0"}


def test_the_goldens_pin_the_shipped_preset():
    """The generator writes the preset's spec out by hand; the shipped preset must equal it."""
    preset = mmf.preset("kimi_k2_5")
    for case in ACCEPTED:
        if case.doc["provenance"]["variant"] == "preset":
            entry = case.doc["provenance"]["entry"]
            assert case.doc["spec"] == {**preset, "alpha": "drop" if entry == "path" else "composite",
                                        "exif_transpose": entry == "path"}, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    want = case.doc["expected_error"]
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    with pytest.raises(getattr(mmf, want["type"]), match=want["match"]):
        pipe.process(mmf.MmInput(images=case.images(kimi_k25_images.make), input_ids=case.doc["prompt_ids"]))


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_probes_and_model_kwargs(case):
    extra = case.doc["kimi_k25"]
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    out = pipe.process(mmf.MmInput(images=case.images(kimi_k25_images.make), input_ids=case.doc["prompt_ids"]))
    for item, want in zip(out.items, extra["probes"], strict=True):
        flat = item.feature.array.reshape(-1)
        assert flat[np.linspace(0, flat.size - 1, len(want)).astype(np.int64)].tolist() == want
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == sorted(extra["model_kwargs"])
    pv, thw = extra["model_kwargs"]["pixel_values"], extra["model_kwargs"]["image_grid_thw"]
    assert (kwargs["pixel_values"].dtype, list(kwargs["pixel_values"].shape)) == (np.float32, pv["shape"])
    assert _digest(kwargs["pixel_values"]) == pv["blake3"]
    assert kwargs["image_grid_thw"].dtype == np.int64
    # At most three images per case: tensor_doc keeps the values themselves.
    assert (list(kwargs["image_grid_thw"].shape), kwargs["image_grid_thw"].tolist()) == (thw["shape"], thw["values"])
