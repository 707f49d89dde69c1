"""The request driver: the one model-independent control flow every request runs.

A :class:`Plan` is what a pipeline fixes when it is built (the bound family, limits,
decode options). Per request, :func:`admit` checks the request before any I/O; the
pipeline then resolves its sources to bytes (:mod:`.media`, sync or async), and
:func:`run` does every step after I/O, in order:

per item on the fan-out seam (hash -> decode -> process) -> input ids -> layout ->
apply -> positions -> :class:`~.carriers.Output`.

Any error anywhere rejects the whole request with one typed ``MmError``; nothing partial
is returned. The family only answers hooks (through :class:`~.family.FamilyHooks`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from . import par
from .carriers import Capabilities, DecodeOptions, MmInput, Output, OutputItem, ProcessedItem
from .errors import InvalidInputError, LimitExceededError, MmError
from .family import FamilyHooks, bind
from .layout import apply_layout
from .limits import Limits
from .media.hashing import content_hash

Tokenize = Callable[[str], Sequence[int]]


@attrs.frozen
class Plan:
    """A spec bound to its family, with everything fixed at build time."""

    spec: dict[str, Any] = attrs.field(repr=False)
    spec_json: str = attrs.field(repr=False)
    hooks: FamilyHooks
    limits: Limits
    capabilities: Capabilities
    decode_options: DecodeOptions

    @classmethod
    def build(cls, spec: Mapping[str, Any], limits: Limits) -> Plan:
        hooks = bind(spec)
        return cls(
            spec=dict(spec),
            spec_json=json.dumps(spec, sort_keys=True),
            hooks=hooks,
            limits=limits,
            capabilities=hooks.capabilities(),
            decode_options=attrs.evolve(hooks.decode_options(), max_pixels=limits.max_image_pixels),
        )


def admit(plan: Plan, inp: MmInput) -> None:
    """Request-level checks that need no I/O."""
    n = len(inp.images)
    if n == 0:
        raise InvalidInputError("multimodal request without image sources")
    if n > plan.limits.max_items:
        raise LimitExceededError(f"multimodal request exceeds {plan.limits.max_items} media items (got {n})")


def run(plan: Plan, inp: MmInput, datas: Sequence[bytes], tokenize: Tokenize | None) -> Output:
    """Every step after I/O, in order; ``datas`` are the request's sources as bytes."""
    hooks = plan.hooks

    def one(i: int, data: bytes) -> tuple[ProcessedItem, int]:
        digest = content_hash(data)
        media = hooks.decode(data, plan.decode_options, i)
        return hooks.process_item(media, i), digest

    processed = par.try_map(one, datas)
    ids = _input_ids(inp, tokenize, plan.capabilities.id_range)
    geometries = [item.geometry for item, _ in processed]
    expanded = apply_layout(ids, hooks.layout(ids, geometries), len(processed))
    positions = hooks.positions(len(expanded.input_ids), expanded.offsets, geometries)
    return Output(
        input_ids=expanded.input_ids,
        items=[OutputItem(feature=item.feature, aux=item.aux, hash=h) for item, h in processed],
        offsets=expanded.offsets,
        positions=positions,
        spec=plan.spec_json,
    )


def _input_ids(inp: MmInput, tokenize: Tokenize | None, id_range: tuple[int, int] | None) -> np.ndarray:
    ids = _prompt_ids(inp, tokenize)
    if id_range is not None and len(ids):
        low, high = id_range
        bad = np.flatnonzero((ids < low) | (ids > high))
        if len(bad):
            k = int(bad[0])
            raise InvalidInputError(f"input_ids[{k}] = {int(ids[k])} is outside this family's id range [{low}, {high}]")
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
    return MmInput(images=(), input_ids=ids).input_ids  # the carrier's validation of ids
