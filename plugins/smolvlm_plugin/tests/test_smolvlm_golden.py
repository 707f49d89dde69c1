"""What the golden replay (test_smolvlm_conformance.py, which compares transformers'
stages too) does not compare: the matrix, the pinned specs, the rejections, grids, probe
values and the model kwargs."""

from __future__ import annotations

import pytest

from . import smolvlm_images
import mm_framework as mmf
from mm_framework.testing import assert_rejection, assert_tensors, load_cases, probe, run_case

from .test_smolvlm_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")
PRESETS = ("smolvlm_256m_instruct", "smolvlm2_500m_video_instruct", "idefics3_8b_llama3")


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for preset in PRESETS:
        for suffix in ("", "_no_split"):
            for image in smolvlm_images.IMAGES:
                assert f"{preset}{suffix}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 183 and len(REJECTED) == 6


def test_the_goldens_pin_the_shipped_presets():
    """The generator writes the published configs' image spec; the plugin's presets must equal
    it (their video fields are the video tests')."""
    for case in ACCEPTED:
        preset = case.doc["provenance"]["preset"]
        entry = case.doc["provenance"]["entry"]
        image = {k: v for k, v in mmf.preset(preset).items() if not k.startswith("video_")}
        want = {**image, "alpha": "drop" if entry == "path" else "composite", "exif_transpose": entry == "path"}
        assert {**case.doc["spec"], "do_image_splitting": True} == want, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, smolvlm_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_grids_probes_and_model_kwargs(case):
    extra = case.doc["smolvlm"]
    pipe, out = run_case(case, smolvlm_images.make)
    for item, want in zip(out.items, extra["items"], strict=True):
        assert [item.geometry.rows, item.geometry.cols] == want["grid"]
        assert probe(item.feature.array, len(want["probe"])).tolist() == want["probe"]
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == sorted(extra["model_kwargs"])
    assert_tensors(kwargs, extra["model_kwargs"], {"f32": "float32", "i64": "int64"})
