"""Parity with the torch reference through committed goldens (no torch needed).

``golden/intern_vl_parity.{json,npz}`` were written by ``generate_intern_vl_goldens.py``
from the torch reference. Each case runs the installed pipeline end to end (PNG bytes in)
and compares, with the contract's rtol 1e-6 / atol 1e-5: the whole feature where stored,
a strided sample of it, and float64 sums per (tile, channel) against the summed bound.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from blake3 import blake3

from . import intern_vl_cases as ic
import mm_framework as mmf

GOLDEN = Path(__file__).resolve().parent / "golden"
MANIFEST = json.loads((GOLDEN / "intern_vl_parity.json").read_text())
CASES = {c.name: c for c in ic.cases()}


@pytest.fixture(scope="module")
def arrays():
    with np.load(GOLDEN / "intern_vl_parity.npz") as z:
        return {k: z[k] for k in z.files}


def test_manifest_covers_the_matrix():
    assert [d["name"] for d in MANIFEST["cases"]] == list(CASES)
    assert (MANIFEST["rtol"], MANIFEST["atol"]) == (ic.RTOL, ic.ATOL)


@pytest.mark.parametrize("doc", MANIFEST["cases"], ids=[d["name"] for d in MANIFEST["cases"]])
def test_feature_matches_torch_golden(doc, arrays):
    case = CASES[doc["name"]]
    rgb = case.rgb()
    assert blake3(rgb.tobytes()).hexdigest() == doc["input_blake3"], "the input generator changed"
    out = mmf.pipeline_from_spec(case.spec()).process(mmf.MmInput(images=[ic.png(rgb)], input_ids=[1, 5, 2]))
    got = out.items[0].feature.array
    assert list(got.shape) == doc["shape"]
    if case.full:
        np.testing.assert_allclose(got, arrays[f"{case.name}/full"], rtol=ic.RTOL, atol=ic.ATOL)
    positions = ic.sample_positions(got.size, doc["phase"])
    np.testing.assert_allclose(got.reshape(-1)[positions], arrays[f"{case.name}/sample"], rtol=ic.RTOL, atol=ic.ATOL)
    sums = ic.tile_channel_sums(got)
    plane = got.shape[2] * got.shape[3]
    bound = plane * ic.ATOL + ic.RTOL * np.abs(got.astype(np.float64)).sum(axis=(2, 3))
    excess = np.abs(sums - arrays[f"{case.name}/sums"]) - bound
    assert (excess <= 0).all(), f"per-(tile, channel) sums off by more than the summed tolerance: {excess.max()}"
    tokens = case.num_image_token * got.shape[0]
    assert out.offsets == ((2, 1 + tokens),)
