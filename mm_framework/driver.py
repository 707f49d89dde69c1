"""The request driver: the one model-independent control flow every request runs.

validate -> resolve sources (inline, in order; ``fetch``) -> per item on the fan-out
seam (hash -> decode -> process) -> input ids -> layout -> apply -> positions.
``Pipeline.process`` and ``process_async`` sequence these steps.
Any error anywhere rejects the whole request with one typed ``MmError``; nothing
partial is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from . import par
from .carriers import DecodeOptions, MmInput, Output, OutputItem, ProcessedItem
from .errors import InvalidInputError, LimitExceededError, MmError
from .hashing import content_hash
from .layout import apply_layout
from .limits import Limits
from .plugins import FamilyHooks

Tokenize = Callable[[str], Sequence[int]]


def check_request(inp: MmInput, limits: Limits) -> None:
    n = len(inp.images)
    if n == 0:
        raise InvalidInputError("multimodal request without image sources")
    if n > limits.max_items:
        raise LimitExceededError(f"multimodal request exceeds {limits.max_items} media items (got {n})")


def process_items(
    hooks: FamilyHooks, datas: Sequence[bytes], decode_options: DecodeOptions
) -> list[tuple[ProcessedItem, int]]:
    def one(i: int, data: bytes) -> tuple[ProcessedItem, int]:
        digest = content_hash(data)
        media = hooks.decode(data, decode_options, i)
        return hooks.process_item(media, i), digest

    return par.try_map(one, datas)


def input_ids_of(inp: MmInput, tokenize: Tokenize | None, id_range: tuple[int, int] | None) -> np.ndarray:
    ids = _prompt_ids(inp, tokenize)
    if id_range is not None and len(ids):
        low, high = id_range
        bad = np.flatnonzero((ids < low) | (ids > high))
        if len(bad):
            k = int(bad[0])
            raise InvalidInputError(
                f"input_ids[{k}] = {int(ids[k])} is outside this family's id range [{low}, {high}]"
            )
    return ids


def _prompt_ids(inp: MmInput, tokenize: Tokenize | None) -> np.ndarray:
    if inp.input_ids is not None and len(inp.input_ids) > 0:
        return inp.input_ids
    if inp.text is None:
        raise InvalidInputError("multimodal request without text or input_ids")
    if tokenize is None:
        raise InvalidInputError("request has text but no tokenize callable was given")
    try:
        ids = tokenize(inp.text)
    except MmError:
        raise
    except Exception as e:
        raise InvalidInputError(f"tokenize failed: {type(e).__name__}: {e}") from e
    return MmInput(images=(), input_ids=ids).input_ids  # reuse the carrier's validation


def assemble(
    hooks: FamilyHooks,
    inp: MmInput,
    processed: Sequence[tuple[ProcessedItem, int]],
    tokenize: Tokenize | None,
    id_range: tuple[int, int] | None,
) -> Output:
    ids = input_ids_of(inp, tokenize, id_range)
    geometries = [item.geometry for item, _ in processed]
    layout = hooks.layout(ids, geometries)
    expanded = apply_layout(ids, layout, len(processed))
    positions = hooks.positions(len(expanded.input_ids), expanded.offsets, geometries)
    items = [OutputItem(feature=item.feature, aux=item.aux, hash=h) for item, h in processed]
    return Output(
        input_ids=expanded.input_ids,
        items=items,
        offsets=expanded.offsets,
        positions=positions,
        kwargs_builder=hooks.model_kwargs,
    )


def decode_options_for(hooks: FamilyHooks, limits: Limits) -> DecodeOptions:
    return attrs.evolve(hooks.decode_options(), max_pixels=limits.max_image_pixels)
