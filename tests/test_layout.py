"""TokenLayout mechanics: the worked examples and every validation of the reference."""

from __future__ import annotations

import numpy as np
import pytest

from mm_framework import LayoutError
from mm_framework.plugin import (
    Explicit, Media, Repeat, Text, TokenLayout, apply_layout, layout_by_placeholder, layout_by_placeholders,
)

PAD = 1


def expand(src, segments, n):
    out = apply_layout(src, TokenLayout(segments), n)
    return out.input_ids.tolist(), list(out.offsets)


def test_placeholder_example_expands_in_order_with_inclusive_offsets():
    src = [7, PAD, 8, PAD, 9]
    layout = layout_by_placeholder(src, PAD, [2, 3])
    out = apply_layout(src, layout, 2)
    assert out.input_ids.tolist() == [7, 1, 1, 8, 1, 1, 1, 9]
    assert out.input_ids.dtype == np.int64
    assert list(out.offsets) == [(1, 2), (4, 6)]


def test_placeholders_of_several_modalities_take_their_own_items_wherever_they_sit():
    # items in request order (images, then audios); the prompt interleaves them
    img, aud = 3, 4
    src = [7, aud, 8, img, aud, 9, img]
    modalities = ["image", "image", "audio", "audio"]
    patterns = [Repeat(img, 2), Explicit([50, img, 51], 1, 2), Repeat(aud, 1), Repeat(aud, 3)]
    layout = layout_by_placeholders(src, {"image": img, "audio": aud}, modalities, patterns.__getitem__)
    out = apply_layout(src, layout, 4)
    assert out.input_ids.tolist() == [7, aud, 8, img, img, aud, aud, aud, 9, 50, img, 51]
    assert list(out.offsets) == [(3, 4), (10, 10), (1, 1), (5, 7)]


def test_placeholder_count_of_a_modality_must_equal_its_items():
    with pytest.raises(LayoutError, match=r"^prompt has 1 audio placeholder\(s\) but 2 audio item\(s\) "
                                          r"\(placeholder id 4\)$"):
        layout_by_placeholders([3, 4], {"image": 3, "audio": 4}, ["image", "audio", "audio"],
                               lambda i: Repeat(4, 1))
    with pytest.raises(LayoutError, match=r"^prompt has 2 media placeholder\(s\) but 1 media item\(s\)"):
        layout_by_placeholder([1, 1], 1, [2])


def test_readme_example_layout_value():
    layout = layout_by_placeholder([5, PAD, 6], PAD, [4])
    assert layout.segments == (Text(0, 1), Media(0, Repeat(PAD, 4)), Text(2, 3))
    assert expand([5, PAD, 6], layout.segments, 1) == ([5, 1, 1, 1, 1, 6], [(1, 4)])


def test_adjacent_placeholders_give_adjacent_media():
    layout = layout_by_placeholder([PAD, PAD], PAD, [1, 2])
    assert layout.segments == (Media(0, Repeat(PAD, 1)), Media(1, Repeat(PAD, 2)))


@pytest.mark.parametrize(
    "src, counts", [([7, 1, 9], [2, 3]), ([7, 1, 1, 9], [2])], ids=["fewer-placeholders", "more-placeholders"]
)
def test_count_mismatch_errs(src, counts):
    with pytest.raises(LayoutError, match=r"prompt has \d+ media placeholder\(s\) but \d+ media item\(s\)"):
        layout_by_placeholder(src, PAD, counts)


def test_zero_count_errs_in_apply():
    layout = layout_by_placeholder([7, 1, 9], PAD, [0])
    with pytest.raises(LayoutError, match="layout: media item 0 expands to zero tokens"):
        apply_layout([7, 1, 9], layout, 1)


def test_no_placeholders_no_items_ok():
    assert expand([7, 8], layout_by_placeholder([7, 8], PAD, []).segments, 0) == ([7, 8], [])


def test_explicit_content_ranges():
    full = [Text(0, 1), Media(0, Explicit([90, 5, 5, 91], 0, 4)), Text(2, 3)]
    assert expand([7, 1, 9], full, 1) == ([7, 90, 5, 5, 91, 9], [(1, 4)])
    inner = [Text(0, 1), Media(0, Explicit([90, 5, 5, 91], 1, 3)), Text(2, 3)]
    assert expand([7, 1, 9], inner, 1) == ([7, 90, 5, 5, 91, 9], [(2, 3)])
    default_end = [Text(0, 1), Media(0, Explicit([90, 5, 91], 1)), Text(2, 3)]
    assert expand([7, 1, 9], default_end, 1) == ([7, 90, 5, 91, 9], [(2, 3)])


@pytest.mark.parametrize(
    "content, msg",
    [((2, 2), "content range 2..2 outside its 4 token"), ((1, 5), "content range 1..5 outside its 4 token")],
)
def test_explicit_bad_content_range(content, msg):
    with pytest.raises(LayoutError, match=msg):
        expand([7, 1, 9], [Text(0, 1), Media(0, Explicit([90, 5, 5, 91], *content)), Text(2, 3)], 1)


def test_item_missing_and_text_out_of_bounds():
    with pytest.raises(LayoutError, match="layout: media item 0 not placed"):
        expand([7, 1, 9], [Text(0, 3)], 1)
    with pytest.raises(LayoutError, match=r"layout: text range 0\.\.4 out of bounds"):
        expand([7, 1, 9], [Text(0, 4)], 0)
    with pytest.raises(LayoutError, match=r"layout: text range 2\.\.1 out of bounds"):
        expand([7, 1, 9], [Text(2, 1)], 0)


M = Media(0, Repeat(5, 2))


@pytest.mark.parametrize(
    "segments, msg",
    [
        ([Text(0, 1), M], "layout: covers 2 of 3 source token"),
        ([M, Text(2, 3)], r"text range 2\.\.3 does not resume at source index 1"),
        ([Text(0, 1), Text(2, 3), M], r"text range 2\.\.3 does not resume at source index 1"),
        ([Text(0, 1), Text(0, 1), M, Text(2, 3)], r"text range 0\.\.1 does not resume at source index 1"),
        ([Text(2, 3), M, Text(0, 1)], r"text range 2\.\.3 does not resume at source index 0"),
    ],
    ids=["dropped-tail", "dropped-head", "gap", "duplicate", "out-of-order"],
)
def test_incomplete_or_disordered_coverage_errs(segments, msg):
    with pytest.raises(LayoutError, match=msg):
        expand([7, 1, 9], segments, 1)


def test_item_range_placed_twice_and_no_placeholder_left():
    with pytest.raises(LayoutError, match="layout: media item 1 out of range"):
        expand([7, 1, 9], [Text(0, 1), Media(1, Repeat(5, 2)), Text(2, 3)], 1)
    with pytest.raises(LayoutError, match="layout: media item 0 placed twice"):
        expand([1, 1], [Media(0, Repeat(5, 1)), Media(0, Repeat(5, 1))], 1)
    with pytest.raises(LayoutError, match="layout: media item 1 has no source placeholder at index 1"):
        expand([1], [Media(0, Repeat(5, 1)), Media(1, Repeat(5, 1))], 2)


def test_items_may_be_placed_out_of_index_order():
    ids, offsets = expand([1, 1], [Media(1, Repeat(5, 1)), Media(0, Repeat(6, 2))], 2)
    assert ids == [5, 6, 6] and offsets == [(1, 2), (0, 0)]


def test_segments_are_validated_at_construction():
    with pytest.raises(LayoutError):
        Text(-1, 2)
    with pytest.raises(LayoutError):
        Repeat(5, -1)
    with pytest.raises(LayoutError):
        TokenLayout(["not a segment"])


def test_media_may_replace_its_neighbours_too():
    # A tokenizer that merges the expansion with the token before it ("\n" + "\n\n" -> "\n\n\n"):
    # the item replaces both source tokens and its pattern carries the merged one.
    segments = [Text(0, 1), Media(0, Explicit([12, 90, 5, 5, 91], 2, 4), span=2), Text(3, 4)]
    ids, offsets = expand([7, 10, 1, 9], segments, 1)
    assert ids == [7, 12, 90, 5, 5, 91, 9] and offsets == [(3, 4)]
    ids, _ = expand([1, 10, 10], [Media(0, Repeat(5, 2), span=3)], 1)
    assert ids == [5, 5]


def test_media_span_is_validated():
    with pytest.raises(LayoutError, match="layout: media item 0 has no source placeholder at indices 1..3"):
        expand([7, 1], [Text(0, 1), Media(0, Repeat(5, 1), span=2)], 1)
    with pytest.raises(LayoutError, match="layout: covers 2 of 3 source token"):
        expand([7, 1, 9], [Text(0, 1), Media(0, Repeat(5, 1))], 1)
    for bad in (0, -1, True, 1.5):
        with pytest.raises(LayoutError, match="layout: span"):
            Media(0, Repeat(5, 1), span=bad)
