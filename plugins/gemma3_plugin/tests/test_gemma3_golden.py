"""What the golden replay (test_gemma3_conformance.py, which compares transformers'
intermediate stages too) does not compare: the rejections, crop counts, probe values and
the model kwargs."""

from __future__ import annotations

import numpy as np
import pytest

from . import gemma3_images
from gemma3_plugin.family import Gemma3Family
from mm_framework.testing import assert_rejection, digest, load_cases, probe, run_case

from .test_gemma3_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for preset in ("gemma3_4b_it", "gemma3_4b_it_pan_and_scan"):
        for image in gemma3_images.IMAGES:
            assert f"{preset}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 74 and len(REJECTED) == 2


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, gemma3_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_crops_probes_and_model_kwargs(case):
    spec, extra = case.doc["spec"], case.doc["gemma3"]
    family = Gemma3Family({k: v for k, v in spec.items() if k != "family"})
    pipe, out = run_case(case, gemma3_images.make)
    for i, (item, want) in enumerate(zip(out.items, extra["items"])):
        w, h = item.size
        boxes = family.crops(w, h)
        assert len(boxes) == want["num_crops"] and [[y1 - y0, x1 - x0] for x0, y0, x1, y1 in boxes] == want["crop_hw"]
        assert probe(item.feature.array, len(want["probe"])).tolist() == want["probe"]
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == ["pixel_values"]
    pv = kwargs["pixel_values"]
    assert pv.dtype == np.float32 and list(pv.shape) == extra["model_kwargs"]["pixel_values"]["shape"]
    assert digest(pv) == extra["model_kwargs"]["pixel_values"]["blake3"]
