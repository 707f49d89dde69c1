"""What the golden replay (test_glm4v_conformance.py, which compares transformers' decoded
and resized stages too) does not cover: the matrix is complete, the rejections replay, and
the model kwargs of each case equal the recorded per-item tensors."""

from __future__ import annotations

import numpy as np
import pytest

from . import glm4v_images as images
from mm_framework.testing import assert_rejection, load_cases, run_case
from mm_framework.testing.records import digest

from .test_glm4v_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for backend in ("pil", "torchvision"):
        for image in images.IMAGES:
            assert f"glm4_1v_9b_thinking_{backend}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 112 and len(REJECTED) == 4
    assert {c.doc["provenance"]["processor"] for c in ACCEPTED} == {"Glm4vProcessor", "Glm46VProcessor"}
    assert all(c.reference() and "transformers 5.24.0" in c.reference() for c in ACCEPTED + REJECTED)


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, images.make, naming_item=True)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_model_kwargs(case):
    pipe, out = run_case(case, images.make)
    kwargs = pipe.model_kwargs(out)
    exp = case.doc["expected"]
    rows = np.cumsum([0] + [f["shape"][0] for f in exp["features"]])
    pv = kwargs["pixel_values"]
    assert pv.dtype == np.float32 and pv.shape[0] == rows[-1]
    assert [digest(pv[a:b]) for a, b in zip(rows, rows[1:])] == [f["blake3"] for f in exp["features"]]
    assert kwargs["image_grid_thw"].tolist() == [a["image_grid_thw"]["values"] for a in exp["aux"]]
