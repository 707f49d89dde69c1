"""Built-in defaults, registered ``trylast`` on every pipeline like any other plugin."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .carriers import Capabilities, DecodedImage, DecodeOptions, Geometry, OutputItem, Positions, Rope1D
from .media.decode import decode_rgb
from .hookspecs import hookimpl


@hookimpl(trylast=True)
def mm_capabilities() -> Capabilities:
    return Capabilities()


@hookimpl(trylast=True)
def mm_decode_options() -> DecodeOptions:
    return DecodeOptions()


@hookimpl(trylast=True)
def mm_decode(data: bytes, options: DecodeOptions) -> DecodedImage:
    return decode_rgb(data, options)


@hookimpl(trylast=True)
def mm_positions(input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Geometry]) -> Positions:
    return Rope1D()


@hookimpl(trylast=True)
def mm_model_kwargs(items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
    """Features concatenated along their first axis, each aux tensor stacked per item."""
    if not items:
        return {}
    out = {"features": np.concatenate([it.feature.array for it in items], axis=0)}
    for name in items[0].aux:
        out[name] = np.stack([it.aux[name].array for it in items])
    return out
