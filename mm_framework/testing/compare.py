"""Comparing two outputs byte for byte, naming the first thing that differs; and the
reference for M-RoPE positions of items of one type with nothing between them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from ..request import MmInput, Output


def assert_same_output(a: Output, b: Output, what: str) -> None:
    assert np.array_equal(a.input_ids, b.input_ids), f"{what}: input_ids differ"
    assert a.offsets == b.offsets, f"{what}: offsets differ"
    assert a.positions == b.positions, f"{what}: positions differ"
    for i, (x, y) in enumerate(zip(a.items, b.items, strict=True)):
        assert x.hash == y.hash, f"{what}: item {i} hash differs"
        assert (x.geometry, x.size, x.processed_size) == (y.geometry, y.size, y.processed_size), (
            f"{what}: item {i} geometry or sizes differ"
        )
        assert x.feature.dtype == y.feature.dtype and x.feature.array.tobytes() == y.feature.array.tobytes(), (
            f"{what}: item {i} feature bytes differ"
        )
        assert sorted(x.aux) == sorted(y.aux), f"{what}: item {i} aux names differ"
        for k in x.aux:
            assert x.aux[k].array.tobytes() == y.aux[k].array.tobytes(), f"{what}: item {i} aux {k} differs"


def part_adjacent(ids: Sequence[int], placeholders: Collection[int], separator: int) -> list[int]:
    """``ids`` with ``separator`` (a text id no expansion writes) between every two
    placeholders that touch.

    The models' ``get_rope_index`` reads two items of one type with nothing between them as
    one run and fails; the M-RoPE families give each item its own grid, as if a zero-length
    text run parted them. The parted prompt's positions are defined, so the adjacent prompt's
    must equal them once :func:`drop_separators` took the separators out
    (docs/families/qwen_vl_video.md §7).
    """
    marks = set(placeholders)
    out: list[int] = []
    for k, tok in enumerate(ids):
        out.append(int(tok))
        if tok in marks and k + 1 < len(ids) and ids[k + 1] in marks:
            out.append(separator)
    return out


def drop_separators(input_ids: np.ndarray, positions: np.ndarray, separator: int) -> tuple[list[int], np.ndarray]:
    """A parted prompt's expanded ids and ``[3, L]`` positions without the ``separator``
    columns, every later position one lower per separator dropped (each text token moves what
    follows it up by one)."""
    sep = np.asarray(input_ids) == separator
    keep = ~sep
    return np.asarray(input_ids)[keep].tolist(), np.asarray(positions)[:, keep] - np.cumsum(sep)[keep]


def assert_adjacent_images_parted(pipe: Any, images: Sequence[Any], separator: int, get_rope_index: Any) -> None:
    """An image-only M-RoPE family's default prompt (one placeholder per image, nothing between
    them) against the model's ``get_rope_index`` (transformers' function, called with
    ``input_ids``, ``mm_token_type_ids`` and ``image_grid_thw`` as torch tensors; torch must
    import): it fails there, as on any adjacent runs of one type, and the pipeline's positions
    equal its positions of the same images with ``separator`` parting them, the separators
    dropped (:func:`drop_separators`)."""
    import torch

    out = pipe.process(MmInput(images=list(images)))
    pad = int(out.input_ids[out.offsets[0][0]])

    def rope(o: Output) -> tuple[np.ndarray, int]:
        ids = torch.tensor(np.asarray(o.input_ids))[None]
        grids = torch.from_numpy(pipe.model_kwargs(o)["image_grid_thw"])
        pos, delta = get_rope_index(input_ids=ids, mm_token_type_ids=(ids == pad).int(), image_grid_thw=grids)
        return pos[:, 0].numpy(), int(delta.reshape(-1)[0])

    try:
        rope(out)
    except Exception:  # the reference's own failure (a torch shape error)
        pass
    else:
        raise AssertionError("get_rope_index gave positions for adjacent images; they are not parted")
    parted = pipe.process(MmInput(images=list(images), input_ids=part_adjacent([pad] * len(images), [pad], separator)))
    pos, delta = rope(parted)
    np.testing.assert_array_equal(out.positions.positions, drop_separators(parted.input_ids, pos, separator)[1])
    assert out.positions.delta == delta
