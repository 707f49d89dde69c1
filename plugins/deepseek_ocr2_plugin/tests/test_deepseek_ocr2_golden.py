"""What the golden replay (test_deepseek_ocr2_conformance.py, which compares transformers'
stages too) does not compare: the matrix, the pinned spec, the rejections, grids, probe
values and the model kwargs."""

from __future__ import annotations

import numpy as np
import pytest
from blake3 import blake3

from . import deepseek_ocr2_images
import mm_framework as mmf
from mm_framework.testing import load_cases

from .test_deepseek_ocr2_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")
OPTIONS = {"": {}, "_no_crop": {"crop_to_patches": False}, "_crops_1_9": {"min_patches": 1, "max_patches": 9}}


def _digest(a: np.ndarray) -> str:
    return blake3(np.ascontiguousarray(a).tobytes()).hexdigest()


def _run(case):
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    return pipe, pipe.process(mmf.MmInput(images=case.images(deepseek_ocr2_images.make),
                                          input_ids=case.doc["prompt_ids"]))


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
    want = case.doc["expected_error"]
    with pytest.raises(getattr(mmf, want["type"]), match=want["match"]):
        _run(case)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_grids_probes_and_model_kwargs(case):
    extra = case.doc["deepseek_ocr2"]
    pipe, out = _run(case)
    for item, want in zip(out.items, extra["items"], strict=True):
        assert [item.geometry.cols, item.geometry.rows] == want["grid"]
        for key, array in (("probe_global", item.aux["pixel_values"].array), ("probe_local", item.feature.array)):
            flat = array.reshape(-1)
            probe = flat[np.linspace(0, flat.size - 1, len(want[key])).astype(np.int64)] if flat.size else flat
            assert probe.tolist() == want[key], key
    kwargs = pipe.model_kwargs(out)
    assert list(kwargs) == list(extra["model_kwargs"])
    for key, doc in extra["model_kwargs"].items():
        got = kwargs[key]
        assert (str(got.dtype), list(got.shape)) == ({"f32": "float32", "i64": "int64"}[doc["dtype"]], doc["shape"])
        assert _digest(got) == doc["blake3"], key
