"""What the golden replay (test_minicpmv4_6_conformance.py, which compares transformers'
stages too) does not compare: the matrix, the pinned specs, the rejections, grids,
``target_sizes``, probe values and the model kwargs."""

from __future__ import annotations

import pytest

from . import generate_minicpmv4_6_goldens as generator
from . import minicpmv4_6_images
import mm_framework as mmf
from mm_framework.testing import assert_rejection, assert_tensors, load_cases, probe, run_case

from .test_minicpmv4_6_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")
DTYPES = {"f32": "float32", "i32": "int32"}


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for suffix in generator.VARIANTS:
        for image in minicpmv4_6_images.IMAGES if not suffix else generator.SOME:
            assert f"minicpm_v_4_6{suffix}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 63 and len(REJECTED) == 1


def test_the_goldens_pin_the_shipped_presets():
    """The generator writes the preset's spec with each variant's options; the plugin's
    presets must equal it."""
    assert generator.PUBLISHED == mmf.preset("minicpm_v_4_6")
    assert {**generator.PUBLISHED, "downsample_mode": "4x", "video_downsample_mode": "4x"} == mmf.preset(
        "minicpm_v_4_6_4x")
    for case in ACCEPTED:
        variant = case.doc["provenance"]["variant"]
        entry = case.doc["provenance"]["entry"]
        change = generator.VARIANTS["" if variant == "preset" else variant]
        want = {**mmf.preset("minicpm_v_4_6"), **change, "alpha": "drop" if entry == "path" else "composite",
                "exif_transpose": entry == "path"}
        assert case.doc["spec"] == want, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, minicpmv4_6_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_grids_target_sizes_probes_and_model_kwargs(case):
    extra = case.doc["minicpmv4_6"]
    pipe, out = run_case(case, minicpmv4_6_images.make)
    for item, want in zip(out.items, extra["items"], strict=True):
        g = item.geometry
        assert [g.rows, g.cols] == want["grid"]
        assert [list(t) for t in g.target_sizes()] == want["target_sizes"]
        assert probe(item.feature.array, len(want["probe"])).tolist() == want["probe"]
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == sorted(extra["model_kwargs"])
    assert_tensors(kwargs, extra["model_kwargs"], DTYPES)
