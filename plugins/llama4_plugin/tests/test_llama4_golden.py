"""What the golden replay (test_llama4_conformance.py, which compares transformers' stages
too) does not compare: the matrix, the pinned specs, the rejections, grids, probe values and
the model kwargs."""

from __future__ import annotations

import pytest

from . import llama4_images, llama4_reference
import mm_framework as mmf
from mm_framework.testing import assert_rejection, assert_tensors, load_cases, probe, run_case

from .test_llama4_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for suffix in ("", "_max_canvas"):
        for image in llama4_images.IMAGES:
            assert f"llama4{suffix}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 118 and len(REJECTED) == 2
    variants = {c.doc["provenance"]["variant"] for c in ACCEPTED}
    assert variants == {"preset", "_max_canvas", "_max_patches_4", "_bicubic", "_lanczos", "_rescale_only",
                        "_clip_norm", "_tile_224_mp9"}


def test_the_goldens_pin_the_shipped_presets():
    """The generator writes the published files' spec; both presets must equal it."""
    published = llama4_reference.published_spec()
    for name in ("llama4_scout_17b_16e_instruct", "llama4_maverick_17b_128e_instruct"):
        assert mmf.preset(name) == published
    for case in ACCEPTED:
        if case.doc["provenance"]["variant"] == "preset":
            entry = case.doc["provenance"]["entry"]
            assert case.doc["spec"] == {**published, "alpha": "drop" if entry == "path" else "composite",
                                        "exif_transpose": entry == "path"}, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    assert_rejection(case, llama4_images.make)


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_grids_probes_and_model_kwargs(case):
    extra = case.doc["llama4"]
    pipe, out = run_case(case, llama4_images.make)
    for item, want in zip(out.items, extra["items"], strict=True):
        assert [item.geometry.rows, item.geometry.cols] == want["grid"]
        assert probe(item.feature.array, len(want["probe"])).tolist() == want["probe"]
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == sorted(extra["model_kwargs"])
    assert_tensors(kwargs, extra["model_kwargs"], {"bf16": "uint16", "f32": "float32"})
