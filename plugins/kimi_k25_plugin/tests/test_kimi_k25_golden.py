"""What the golden replay (test_kimi_k25_conformance.py, which compares transformers' stages
too) does not compare: the matrix, the pinned preset, the rejections, probe values and the
model kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from . import kimi_k25_images
import mm_framework as mmf
from kimi_k25_plugin.video_spec import VIDEO_FIELDS
from mm_framework.testing import assert_rejection, digest, load_cases, probe, run_case

from .test_kimi_k25_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")


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
    """The generator writes the preset's spec out by hand; the shipped preset's image fields must equal
    it (the image cases' specs take no video; the video goldens pin the video fields)."""
    preset = {k: v for k, v in mmf.preset("kimi_k2_5").items() if k not in VIDEO_FIELDS}
    for case in ACCEPTED:
        if case.doc["provenance"]["variant"] == "preset":
            entry = case.doc["provenance"]["entry"]
            assert case.doc["spec"] == {**preset, "alpha": "drop" if entry == "path" else "composite",
                                        "exif_transpose": entry == "path"}, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, kimi_k25_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_probes_and_model_kwargs(case):
    extra = case.doc["kimi_k25"]
    pipe, out = run_case(case, kimi_k25_images.make)
    for item, want in zip(out.items, extra["probes"], strict=True):
        assert probe(item.feature.array, len(want)).tolist() == want
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == sorted(extra["model_kwargs"])
    pv, thw = extra["model_kwargs"]["pixel_values"], extra["model_kwargs"]["image_grid_thw"]
    assert (kwargs["pixel_values"].dtype, list(kwargs["pixel_values"].shape)) == (np.float32, pv["shape"])
    assert digest(kwargs["pixel_values"]) == pv["blake3"]
    assert kwargs["image_grid_thw"].dtype == np.int64
    # At most three images per case: tensor_doc keeps the values themselves.
    assert (list(kwargs["image_grid_thw"].shape), kwargs["image_grid_thw"].tolist()) == (thw["shape"], thw["values"])
