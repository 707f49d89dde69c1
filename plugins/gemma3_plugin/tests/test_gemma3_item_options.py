"""Pan-and-scan per item (``Capabilities.item_options``): an item's options build the family from
the spec with those fields replaced, so it equals the pipeline of that spec, crop counts beyond
the request spec's table included, and a value the spec refuses is named with its item."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import sample_image

PRESET = mmf.preset("gemma3_4b_it")
WIDE = sample_image(3000, 500, "PNG", seed=5)  # ratio 6: 2 to 6 crops as the crop limit allows
BOI = PRESET["boi_token_id"]


def run(spec, *items, **options):
    inp = mmf.MmInput(items=list(items), input_ids=[2, BOI, 7, BOI, 3], options=options)
    return mmf.pipeline_from_spec(spec).process(inp)


def same(a, b):
    assert a.input_ids.tolist() == b.input_ids.tolist() and a.offsets == b.offsets
    for x, y in zip(a.items, b.items):
        assert np.array_equal(x.feature.array, y.feature.array)


def test_per_item_pan_and_scan_equals_the_spec_with_it():
    plain, crops = mmf.Image(WIDE), mmf.Image(WIDE, do_pan_and_scan=True)
    mixed = run(PRESET, crops, plain)
    same(mixed, run({**PRESET, "do_pan_and_scan": True}, plain, mmf.Image(WIDE, do_pan_and_scan=False)))
    assert [it.feature.array.shape[0] for it in mixed.items] == [5, 1]  # 4 crops, the spec's limit
    same(run(PRESET, plain, plain, do_pan_and_scan=True), run(mmf.preset("gemma3_4b_it_pan_and_scan"), plain, plain))


def test_more_crops_than_the_request_spec_allows():
    out = run(PRESET, mmf.Image(WIDE, do_pan_and_scan=True, pan_and_scan_max_num_crops=6), mmf.Image(WIDE))
    assert out.items[0].feature.array.shape[0] == 7
    same(out, run({**PRESET, "do_pan_and_scan": True, "pan_and_scan_max_num_crops": 6},
                  mmf.Image(WIDE), mmf.Image(WIDE, do_pan_and_scan=False)))


def test_a_refused_value_names_the_option_and_item():
    with pytest.raises(mmf.SpecError, match="pan_and_scan_max_num_crops=0") as e:
        run(PRESET, mmf.Image(WIDE), mmf.Image(WIDE, do_pan_and_scan=True, pan_and_scan_max_num_crops=0))
    assert e.value.item == 1
    with pytest.raises(mmf.SpecError, match="'max_pixels' is not one family 'gemma3' takes"):
        run(PRESET, mmf.Image(WIDE, max_pixels=10), mmf.Image(WIDE))
