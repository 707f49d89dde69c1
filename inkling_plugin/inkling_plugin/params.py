"""Inkling's processing parameters, validated in one place for the API and the family.

The API checks its arguments with :meth:`SpecFields.arguments` (messages name the bare
argument, ``"patch_size must be greater than zero, got 0"``, the seed's wording); the
family checks its spec with the same rules (``"inkling spec: field 'patch_size' ..."``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from mm_framework import Limits
from mm_framework.plugin import SpecFields

from .audio import AUDIO_DEFAULTS, InklingAudio

FAMILY = "inkling"
# The core's default decode limit (Pillow's own decompression-bomb threshold): no image
# is rescaled past it, and no patch may be larger than it, since every image is cut into
# at least one whole patch (a 1x1 image at patch_size 10**5 would be 60 GB of patches).
MAX_PIXELS = Limits().max_image_pixels
MAX_PATCH_SIZE = math.isqrt(MAX_PIXELS)
# The Inkling processor's defaults; -101 is the protocol's negative image placeholder.
DEFAULTS: Mapping[str, Any] = {
    "patch_size": 40, "rescale_frac": 2.0, "rescale_cap": 2048, "image_token_id": -101, **AUDIO_DEFAULTS,
}


class InklingSpec(NamedTuple):
    """A validated ``inkling`` spec (every field optional). Build it with :func:`parse_spec`."""

    patch_size: int
    rescale_frac: float | None
    rescale_cap: int | None
    image_token_id: int
    audio: InklingAudio


def _patch_size(f: SpecFields) -> int:
    return f.integer("patch_size", minimum=1, maximum=MAX_PATCH_SIZE)


def _rescale(f: SpecFields) -> tuple[float | None, int | None]:
    """The optional long-edge rescale, with the Inkling processor's rules.

    ``rescale_frac``: ``None`` (no rescale) or finite > 0. ``rescale_cap``: ``None`` or
    an int > 0, and only together with ``rescale_frac > 1``: the cap bounds growth, so a
    cap without growth is a configuration mistake (the Python processor's
    ``_validate_image_rescale`` rejects it too).
    """
    frac = f.number("rescale_frac", positive=True, nullable=True)
    cap = f.integer("rescale_cap", minimum=1, nullable=True)
    if cap is not None and (frac is None or frac <= 1):
        raise f.error(
            "rescale_cap",
            f"requires rescale_frac > 1, got rescale_frac={frac!r} (set rescale_cap to null/None when not upscaling)",
        )
    return frac, cap


def check_patch_size(patch_size: Any) -> int:
    """``patch_size`` as an int > 0, else :class:`SpecError`."""
    return _patch_size(SpecFields.arguments(patch_size=patch_size))


def check_rescale(rescale_frac: Any, rescale_cap: Any) -> tuple[float | None, int | None]:
    """``(rescale_frac, rescale_cap)`` checked by the rules of :func:`_rescale`, else :class:`SpecError`."""
    return _rescale(SpecFields.arguments(rescale_frac=rescale_frac, rescale_cap=rescale_cap))


def check_params(patch_size: Any, rescale_frac: Any, rescale_cap: Any) -> tuple[int, float | None, int | None]:
    return (check_patch_size(patch_size), *check_rescale(rescale_frac, rescale_cap))


def parse_spec(params: Mapping[str, Any]) -> InklingSpec:
    """Validate the spec fields (without ``"family"``) into an :class:`InklingSpec`.

    ``image_token_id`` is any int64 (the default is negative); ``audio_token_id`` too, but
    not the image's. The audio fields are :class:`~.audio.InklingAudio`'s.
    """
    f = SpecFields(FAMILY, params, defaults=DEFAULTS)
    image_token_id = f.integer("image_token_id")
    audio = InklingAudio.from_fields(f)
    if audio.token_id == image_token_id:
        raise f.error(["image_token_id", "audio_token_id"], f"must differ, got {image_token_id} for both")
    return InklingSpec(_patch_size(f), *_rescale(f), image_token_id, audio)
