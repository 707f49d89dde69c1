"""Built-in defaults, registered ``trylast`` on every pipeline like any other plugin.

Every optional family hook's fallback lives here and nowhere else; the hooks a family
must implement are :data:`REQUIRED`, and :data:`TOGETHER` come as a pair or not at all
(:class:`~.family.FamilyHooks` checks both when it binds a family).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .carriers import (
    AudioHeader, Capabilities, ClipHeader, DecodedImage, DecodeOptions, Geometry, OutputItem, Positions,
    ProcessedItem, Rope1D,
)
from .errors import UnsupportedError
from .hookspecs import hookimpl
from .media.decode import decode_rgb
from .model_kwargs import joined

REQUIRED = ("mm_process_item", "mm_layout", "mm_plan_item")
TOGETHER = ("mm_stored_pixels", "mm_features_from_pixels")


class FamilyDefaults:
    """The fallbacks for one bound family (its name and spec, for the answers that need them)."""

    def __init__(self, family: str, spec: Mapping[str, Any], processor: object) -> None:
        self._family = family
        self._spec = dict(spec)
        self._processor = processor

    @hookimpl(trylast=True)
    def mm_capabilities(self) -> Capabilities:
        return Capabilities()

    @hookimpl(trylast=True)
    def mm_resolved_spec(self) -> dict[str, Any]:
        # A family that parsed its spec into a value with ``to_dict()`` (the SpecFields way)
        # has its complete spec there; otherwise the spec is taken as given.
        parsed = getattr(self._processor, "spec", None)
        to_dict = getattr(parsed, "to_dict", None)
        return to_dict() if callable(to_dict) else dict(self._spec)

    @hookimpl(trylast=True)
    def mm_decode_options(self) -> DecodeOptions:
        return DecodeOptions()

    @hookimpl(trylast=True)
    def mm_decode(self, data: bytes, options: DecodeOptions) -> DecodedImage:
        return decode_rgb(data, options, keep_source=options.keep_source)

    @hookimpl(trylast=True)
    def mm_sample_frames(self, header: ClipHeader) -> None:
        return None  # every frame

    @hookimpl(trylast=True)
    def mm_audio_frames(self, header: AudioHeader) -> None:
        return None  # the whole clip

    @hookimpl(trylast=True)
    def mm_positions(
        self, input_len: int, offsets: Sequence[tuple[int, int]], geometries: Sequence[Geometry]
    ) -> Positions:
        return Rope1D()

    @hookimpl(trylast=True)
    def mm_expansion_text(self, modality: str, geometry: Geometry) -> None:
        return None  # the expansion is ids only

    def _no_storage(self, hook: str) -> UnsupportedError:
        return UnsupportedError(f"family {self._family!r} does not implement {hook} (no uint8 pixel storage)")

    @hookimpl(trylast=True)
    def mm_stored_pixels(self, media: DecodedImage) -> np.ndarray:
        raise self._no_storage("mm_stored_pixels")

    @hookimpl(trylast=True)
    def mm_features_from_pixels(self, pixels: np.ndarray) -> ProcessedItem:
        raise self._no_storage("mm_features_from_pixels")

    @hookimpl(trylast=True)
    def mm_model_kwargs(self, items: Sequence[OutputItem]) -> dict[str, np.ndarray]:
        """Features concatenated along their first axis (one item's own, uncopied), each aux
        tensor stacked per item."""
        if not items:
            return {}
        out = {"features": joined([it.feature.array for it in items], items[0].feature.array[:0])}
        for name in items[0].aux:
            out[name] = np.stack([it.aux[name].array for it in items])
        return out
