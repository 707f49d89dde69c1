"""Prompt expansion in id space (docs/families/gemma3.md §3), on a small spec whose ids are
easy to read: boi 50, eoi 51, soft 52, 3 soft tokens, "\\n" * k = 9 + k (k <= 4)."""

from __future__ import annotations

import numpy as np
import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from gemma3_plugin.expansion import build_cores, layout, newline_tokens
from gemma3_plugin.spec import parse_spec

SPEC = parse_spec({
    "image_token_id": 52, "boi_token_id": 50, "eoi_token_id": 51, "image_seq_length": 3, "height": 8, "width": 8,
    "rescale_factor": 1 / 255, "image_mean": [0.5] * 3, "image_std": [0.5] * 3, "newline_token_id": 10,
    "newline_run_max": 4, "pan_and_scan_intro_ids": [70, 71], "pan_and_scan_crops_ids": [72],
    "pan_and_scan_separator_ids": [73], "pan_and_scan_max_num_crops": 3,
})
CORES = build_cores(SPEC)
B, E, S = 50, 51, 52  # boi, eoi, soft
NL = {k: 9 + k for k in range(1, 5)}  # newline runs


def expand(ids, crops):
    src = np.asarray(ids, dtype=np.int64)
    out = mmp.apply_layout(src, layout(src, [CORES[c] for c in crops], SPEC), len(crops))
    return out.input_ids.tolist(), [list(o) for o in out.offsets]


def test_newline_tokens_are_greedy_longest_first():
    assert newline_tokens(2, SPEC) == [NL[2]]
    assert newline_tokens(4, SPEC) == [NL[4]]
    assert newline_tokens(9, SPEC) == [NL[4], NL[4], NL[1]]
    assert newline_tokens(0, SPEC) == []


def test_plain_image_between_text():
    assert expand([1, B, 2], [0]) == ([1, NL[2], B, S, S, S, E, NL[2], 2], [[3, 5]])


def test_newlines_merge_on_both_sides():
    # "user\n<boi>\nX" -> "user\n\n\n<boi>...<eoi>\n\n\nX"
    assert expand([1, NL[1], B, NL[1], 2], [0]) == ([1, NL[3], B, S, S, S, E, NL[3], 2], [[3, 5]])
    # 3 + 2 newlines -> 4 + 1
    assert expand([NL[3], B], [0]) == ([NL[4], NL[1], B, S, S, S, E, NL[2]], [[3, 5]])


def test_adjacent_images_share_one_newline_run():
    ids, offsets = expand([1, B, B, 2], [0, 0])
    assert ids == [1, NL[2], B, S, S, S, E, NL[4], B, S, S, S, E, NL[2], 2]
    assert offsets == [[3, 5], [9, 11]]
    ids, _ = expand([B, NL[1], B], [0, 0])
    assert ids == [NL[2], B, S, S, S, E, NL[4], NL[1], B, S, S, S, E, NL[2]]


def test_pan_and_scan_item():
    full = [NL[2], B, S, S, S, E, NL[2]]
    ids, offsets = expand([1, B, 2], [2])
    assert ids == [1, 70, 71, *full, 72, *full, 73, *full, 2]
    assert offsets == [[5, 23]]  # first to last soft token, the markers and prose between included
    assert CORES[2].tokens == 19
    # The intro opens with text, so a preceding newline stays; the closing "\n\n" merges.
    ids, _ = expand([NL[1], B, NL[1]], [1])
    assert ids == [NL[1], 70, 71, *full, 72, *full[:-1], NL[3]]


def test_text_between_clusters_is_copied():
    ids, offsets = expand([7, B, 8, NL[1], 9, B, 6], [0, 0])
    assert ids == [7, NL[2], B, S, S, S, E, NL[2], 8, NL[1], 9, NL[2], B, S, S, S, E, NL[2], 6]
    assert offsets == [[3, 5], [13, 15]]


def test_placeholder_count_must_match():
    with pytest.raises(mmf.LayoutError, match=r"2 <start_of_image> placeholder\(s\) \(id 50\) but 1 image"):
        layout(np.asarray([B, B]), [CORES[0]], SPEC)
