"""Pan-and-scan crop boxes (docs/families/gemma3.md §2) with the processor's defaults, and the tiles
and processed size they give an item."""

from __future__ import annotations

import pytest

import mm_framework as mmf
from gemma3_plugin.pan_and_scan import crop_boxes
from mm_framework.testing import sample_image


def boxes(w, h, min_crop=256, max_crops=4, ratio=1.2):
    return crop_boxes(w, h, min_crop, max_crops, ratio)


@pytest.mark.parametrize(
    ("w", "h", "want"),
    [
        (599, 500, []),  # ratio 1.198 < 1.2
        (600, 500, [(0, 0, 300, 500), (300, 0, 600, 500)]),  # exactly 1.2 activates
        (1000, 300, [(0, 0, 334, 300), (334, 0, 668, 300), (668, 0, 1000, 300)]),  # last crop clipped
        (1280, 960, [(0, 0, 640, 960), (640, 0, 1280, 960)]),  # n rounds to 1, raised to 2
        (3000, 500, [(0, 0, 750, 500), (750, 0, 1500, 500), (1500, 0, 2250, 500), (2250, 0, 3000, 500)]),  # cap
        (400, 2000, [(0, 0, 400, 500), (0, 500, 400, 1000), (0, 1000, 400, 1500), (0, 1500, 400, 2000)]),
        (700, 250, []),  # crops 350x250: the short side is below 256
        (333, 501, []),  # portrait, crops of height 251
        (3000, 20, []),
        (896, 896, []),
    ],
)
def test_default_crops(w, h, want):
    assert boxes(w, h) == want


def test_tiny_minimum_crop_gives_empty_trailing_crops():
    # ceil(5 / 4) = 2 wide: the fourth crop starts past the edge, as the reference's slice does.
    assert boxes(5, 1, min_crop=1) == [(0, 0, 2, 1), (2, 0, 4, 1), (4, 0, 5, 1), (6, 0, 5, 1)]


@pytest.mark.parametrize(("preset", "tiles"), [("gemma3_4b_it", 1), ("gemma3_4b_it_pan_and_scan", 3)])
def test_every_tile_is_processed_at_the_spec_size(preset, tiles):
    # 1280x960 gets two crops with pan-and-scan; the image and each crop become 896x896.
    pipe = mmf.pipeline_from_spec(mmf.preset(preset))
    inp = mmf.MmInput(images=[sample_image(1280, 960, "JPEG", 2)], input_ids=[2, 255999, 106])
    for out in (pipe.process(inp), pipe.count_tokens(inp)):
        (item,) = out.items
        assert (item.size, item.processed_size, item.geometry) == ((1280, 960), (896, 896), mmf.Tiles(tiles))
