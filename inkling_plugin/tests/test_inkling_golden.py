"""Golden fixtures (``golden/generate_golden.py``): bits must match exactly."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import inkling_plugin as inkling
from mm_framework import par
from mm_framework import content_hash

GOLDEN_DIR = Path(__file__).parent / "golden"
FILES = sorted(GOLDEN_DIR.glob("golden_*.npz"))


def load(path: Path) -> dict:
    with np.load(path) as z:
        g = {k: z[k] for k in z.files}
    frac = float(g["rescale_frac"])
    cap = int(g["rescale_cap"])
    return {
        "name": str(g["name"]),
        "fmt": str(g["fmt"]),
        "data": g["data"].tobytes(),
        "arr": g["arr"],
        "ps": int(g["patch_size"]),
        "frac": None if math.isnan(frac) else frac,
        "cap": None if cap < 0 else cap,
        "h": int(g["h"]),
        "w": int(g["w"]),
        "bits": g["bits"],
    }


CASES = [load(p) for p in FILES]
IDS = [c["name"] for c in CASES]


@pytest.fixture
def threads():
    yield par.set_threads
    par.set_threads(None)


def test_golden_fixtures_cover_the_reference_matrix():
    names = set(IDS)
    assert {"480x640", "200x320", "37x53", "40x40"} <= names
    assert any(c["frac"] == 2.0 and c["cap"] == 2048 for c in CASES)
    assert any(c["frac"] == 0.5 for c in CASES)
    assert {c["fmt"] for c in CASES} == {"png", "jpeg"}
    assert any(c["fmt"] == "jpeg" and c["frac"] is not None for c in CASES)


@pytest.mark.parametrize("case", [c for c in CASES if c["frac"] is None], ids=lambda c: c["name"])
def test_patchify_rgb_bit_exact(case):
    bits = inkling.patchify_rgb(case["arr"], case["ps"])
    assert bits.dtype == np.uint16 and bits.shape == case["bits"].shape
    assert np.array_equal(bits, case["bits"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_decode_patchify_bit_exact(case):
    h, w, bits = inkling.decode_patchify(case["data"], case["ps"], case["frac"], case["cap"])
    assert (h, w) == (case["h"], case["w"])
    assert bits.shape == case["bits"].shape and np.array_equal(bits, case["bits"])


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_rescale_patchify_hash_bit_exact(case):
    h, w, bits, digest = inkling.rescale_patchify_hash(case["arr"], case["data"], case["ps"], case["frac"], case["cap"])
    assert (h, w) == (case["h"], case["w"])
    assert np.array_equal(bits, case["bits"])
    assert digest == content_hash(case["data"])


@pytest.mark.parametrize("mode", ["inline", 1, 4])
def test_batches_match_goldens(threads, mode):
    threads(mode)
    groups = defaultdict(list)
    for c in CASES:
        groups[(c["ps"], c["frac"], c["cap"])].append(c)
    for (ps, frac, cap), cases in groups.items():
        datas = [c["data"] for c in cases]
        batch = inkling.decode_patchify_batch(datas, ps, frac, cap)
        pre = inkling.preprocess_images(datas, ps, frac, cap)
        for c, (h, w, bits), (h2, w2, bits2, digest) in zip(cases, batch, pre, strict=True):
            assert (h, w) == (h2, w2) == (c["h"], c["w"]), c["name"]
            assert np.array_equal(bits, c["bits"]) and np.array_equal(bits2, c["bits"]), c["name"]
            assert digest == content_hash(c["data"])
