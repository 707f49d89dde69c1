"""Sizing parity: our ``navit_resize`` equals transformers' own function (taken from its source,
no torch needed) over every size up to 600 x 600 and a sweep of large and extreme sizes, under
the preset and under other budgets, caps, patches and merge kernels; token counts equal the
processor's ``get_number_of_image_patches`` arithmetic."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pytest
from PIL import Image

from . import kimi_k25_reference
import mm_framework as mmf
from kimi_k25_plugin import KimiK25Family, navit_resize
from mm_framework import plugin as mmp

REFERENCE = kimi_k25_reference.reference_navit_resize()
SETTINGS = [(14, 2, 16384, 512), (14, 2, 4096, 64), (16, 2, 1024, 512), (14, 1, 100, 20), (8, 3, 7, 3),
            (14, 2, 1, 512), (28, 4, 16384, 100)]


@pytest.mark.parametrize("setting", SETTINGS, ids=[str(s) for s in SETTINGS])
def test_every_small_size_equals_the_reference(setting):
    sides = range(1, 601) if setting == SETTINGS[0] else range(1, 601, 7)
    for h, w in itertools.product(sides, sides):
        assert navit_resize(h, w, *setting) == REFERENCE(h, w, *setting), (h, w)


@pytest.mark.parametrize("setting", SETTINGS, ids=[str(s) for s in SETTINGS])
def test_large_and_extreme_sizes_equal_the_reference(setting):
    rng = np.random.default_rng(5)
    sides = [1, 2, 13, 14, 15, 27, 28, 29, 1791, 1792, 1793, 7167, 7168, 7169, 10000, 65500]
    pairs = list(itertools.product(sides, sides)) + [tuple(p) for p in rng.integers(1, 20000, (3000, 2))]
    for h, w in pairs:
        assert navit_resize(int(h), int(w), *setting) == REFERENCE(int(h), int(w), *setting), (h, w)


def test_plans_and_token_counts_follow_the_padded_grid():
    """``mm_plan_item`` and ``count_tokens`` (headers only) give the padded grid of the
    reference's sizes and ``gh * gw / 4`` tokens, what ``replace_image_token`` writes."""
    spec = mmf.preset("kimi_k2_5")
    fam = KimiK25Family({k: v for k, v in spec.items() if k != "family"})
    pipe = mmf.pipeline_from_spec(spec)
    for w, h in [(1, 1), (100, 57), (1280, 960), (4000, 3000), (8000, 20), (20, 8000)]:
        _, (ph, pw) = REFERENCE(h, w, 14, 2, 16384, 512)
        plan = fam.mm_plan_item(mmp.ImageHeader(width=w, height=h))
        assert (plan.geometry, plan.size) == (mmp.Grid(1, ph // 14, pw // 14), (pw, ph)), (w, h)
        buf = io.BytesIO()
        Image.new("RGB", (w, h)).save(buf, "PNG")
        out = pipe.count_tokens(mmf.MmInput(images=[buf.getvalue()], input_ids=[1, spec["image_token_id"], 2]))
        n = (ph // 14) * (pw // 14) // 4
        assert len(out.input_ids) == n + 2 and list(out.input_ids[1:-1]) == [spec["image_token_id"]] * n
