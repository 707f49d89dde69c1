"""Items of one modality with nothing between them (the default prompt of a request without
ids or text, or ids with two placeholders side by side): each item keeps its own grid's
positions, as if a zero-length text run parted it from the previous one
(docs/families/qwen_vl_video.md §7).

The reference is the same request with a text token between every two placeholders that
touch (``part_adjacent``), whose positions ``get_rope_index`` defines (the goldens and the
live tests prove the pipeline equal to it there): dropping those tokens' columns and moving
every later position down by one per dropped token (``drop_separators``) must give the
adjacent request's positions and delta. The live module checks that ``get_rope_index`` itself fails on the adjacent ids.
"""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework.testing import drop_separators, part_adjacent

SPECS = {n: mmf.preset(n) for n in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_5")}
RNG = np.random.default_rng(27)
IMAGES = [RNG.integers(0, 256, (50, 70, 3), dtype=np.uint8), RNG.integers(0, 256, (90, 40, 3), dtype=np.uint8)]
# Two clips of different lengths, so the two videos' grids differ.
VIDEOS = [RNG.integers(0, 256, (4, 60, 84, 3), dtype=np.uint8), RNG.integers(0, 256, (8, 60, 84, 3), dtype=np.uint8)]
SEP = 9  # a text id no expansion writes (Qwen3 timestamps use 13, 15-24, 27, 29 and the " seconds" id)


def check(spec: dict, images: list, videos: list, ids: list[int] | None) -> mmf.Output:
    pipe = mmf.pipeline_from_spec(spec)
    out = pipe.process(mmf.MmInput(images=images, videos=videos, input_ids=ids))
    marks = (spec["image_token_id"], spec["video_token_id"])
    given = ids if ids is not None else [marks[0]] * len(images) + [marks[1]] * len(videos)
    parted = part_adjacent(given, marks, SEP)
    assert parted != given, "the case has no adjacent placeholders"
    ref = pipe.process(mmf.MmInput(images=images, videos=videos, input_ids=parted))
    want_ids, want_pos = drop_separators(ref.input_ids, ref.positions.positions, SEP)
    assert out.input_ids.tolist() == want_ids
    np.testing.assert_array_equal(out.positions.positions, want_pos)
    assert out.positions.delta == ref.positions.delta
    counted = pipe.count_tokens(mmf.MmInput(images=images, videos=videos, input_ids=ids))
    assert counted.positions == out.positions
    return out


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize(("images", "videos"), [(2, 0), (0, 2), (2, 1), (1, 2), (2, 2)],
                         ids=lambda n: str(n))
def test_default_prompt_gives_each_item_its_own_grid(name, images, videos):
    out = check(SPECS[name], IMAGES[:images], VIDEOS[:videos], None)
    assert [it.modality for it in out.items] == ["image"] * images + ["video"] * videos


@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("kinds", ["IIV", "VVI", "VIIV", "IVV"])
def test_adjacent_placeholders_in_given_ids(name, kinds):
    spec = SPECS[name]
    mark = {"I": spec["image_token_id"], "V": spec["video_token_id"]}
    ids = [151644, 872, *(mark[k] for k in kinds), 151645]
    out = check(spec, IMAGES[: kinds.count("I")], VIDEOS[: kinds.count("V")], ids)
    assert "".join(it.modality[0].upper() for it in out.items) == kinds


def test_two_adjacent_images_match_the_image_only_path():
    """Images alone take the image-only fast path (per item span); with a video after them
    the general index now places them the same way."""
    spec = SPECS["qwen2_5_vl"]
    images_only = check(spec, IMAGES, [], None)
    with_video = check(spec, IMAGES, VIDEOS[:1], None)
    end = images_only.offsets[-1][1] + 1
    np.testing.assert_array_equal(with_video.positions.positions[:, :end], images_only.positions.positions)
