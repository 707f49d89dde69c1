"""What the golden replay (test_smolvlm_conformance.py, which compares transformers'
stages too) does not compare: the matrix, the pinned specs, the rejections, grids, probe
values and the model kwargs."""

from __future__ import annotations

import numpy as np
import pytest
from blake3 import blake3

from . import smolvlm_images
import mm_framework as mmf
from mm_framework.testing import load_cases

from .test_smolvlm_conformance import GOLDEN

ACCEPTED = load_cases(GOLDEN)
REJECTED = load_cases(GOLDEN.parent / "rejections")
PRESETS = ("smolvlm_256m_instruct", "smolvlm2_500m_video_instruct", "idefics3_8b_llama3")


def _digest(a: np.ndarray) -> str:
    return blake3(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_the_matrix_is_complete():
    names = {c.name for c in ACCEPTED} | {c.name for c in REJECTED}
    for preset in PRESETS:
        for suffix in ("", "_no_split"):
            for image in smolvlm_images.IMAGES:
                assert f"{preset}{suffix}-{image.replace('.', '_')}" in names
    assert len(ACCEPTED) == 183 and len(REJECTED) == 6


def test_the_goldens_pin_the_shipped_presets():
    """The generator writes the published configs' spec; the plugin's presets must equal it."""
    for case in ACCEPTED:
        preset = case.doc["provenance"]["preset"]
        entry = case.doc["provenance"]["entry"]
        want = {**mmf.preset(preset), "alpha": "drop" if entry == "path" else "composite",
                "exif_transpose": entry == "path"}
        assert {**case.doc["spec"], "do_image_splitting": True} == want, case.name


@pytest.mark.parametrize("case", REJECTED, ids=[c.name for c in REJECTED])
def test_rejection(case):
    want = case.doc["expected_error"]
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    with pytest.raises(getattr(mmf, want["type"]), match=want["match"]):
        pipe.process(mmf.MmInput(images=case.images(smolvlm_images.make), input_ids=case.doc["prompt_ids"]))


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_grids_probes_and_model_kwargs(case):
    extra = case.doc["smolvlm"]
    pipe = mmf.pipeline_from_spec(case.doc["spec"])
    out = pipe.process(mmf.MmInput(images=case.images(smolvlm_images.make), input_ids=case.doc["prompt_ids"]))
    for item, want in zip(out.items, extra["items"], strict=True):
        assert [item.geometry.rows, item.geometry.cols] == want["grid"]
        flat = item.feature.array.reshape(-1)
        probe = flat[np.linspace(0, flat.size - 1, len(want["probe"])).astype(np.int64)]
        assert probe.tolist() == want["probe"]
    kwargs = pipe.model_kwargs(out)
    assert sorted(kwargs) == sorted(extra["model_kwargs"])
    for key, doc in extra["model_kwargs"].items():
        got = kwargs[key]
        assert (str(got.dtype), list(got.shape)) == ({"f32": "float32", "i64": "int64"}[doc["dtype"]], doc["shape"])
        assert _digest(got) == doc["blake3"], key
