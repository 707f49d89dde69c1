"""What the golden replay (test_deepseek_ocr2_conformance.py, which compares transformers'
stages too) does not compare: the matrix, the pinned spec, the rejections, grids, probe
values and the model kwargs."""

from __future__ import annotations

import pytest

from . import deepseek_ocr2_images
import mm_framework as mmf
from mm_framework.testing import assert_rejection, assert_tensors, load_cases, probe, run_case

from .test_deepseek_ocr2_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")
OPTIONS = {"": {}, "_no_crop": {"crop_to_patches": False}, "_crops_1_9": {"min_patches": 1, "max_patches": 9}}


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for suffix in OPTIONS:
        for image in deepseek_ocr2_images.IMAGES:
            assert f"deepseek_ocr2{suffix}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 104 and len(REJECTED) == 7


def test_the_goldens_pin_the_shipped_preset():
    """The generator writes the published spec (with the case's call options); the plugin's
    preset must equal it."""
    for case in ACCEPTED + REJECTED:
        suffix = case.name.split("-")[0].removeprefix("deepseek_ocr2")
        entry = case.doc["provenance"]["entry"]
        want = {**mmf.preset("deepseek_ocr2"), **OPTIONS[suffix], "alpha": "drop" if entry == "path" else "composite",
                "exif_transpose": entry == "path"}
        assert case.doc["spec"] == want, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, deepseek_ocr2_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_grids_probes_and_model_kwargs(case):
    extra = case.doc["deepseek_ocr2"]
    pipe, out = run_case(case, deepseek_ocr2_images.make)
    for item, want in zip(out.items, extra["items"], strict=True):
        assert [item.geometry.cols, item.geometry.rows] == want["grid"]
        for key, array in (("probe_global", item.aux["pixel_values"].array), ("probe_local", item.feature.array)):
            assert probe(array, len(want[key])).tolist() == want[key], key
    kwargs = pipe.model_kwargs(out)
    assert list(kwargs) == list(extra["model_kwargs"])
    assert_tensors(kwargs, extra["model_kwargs"], {"f32": "float32", "i64": "int64"})
