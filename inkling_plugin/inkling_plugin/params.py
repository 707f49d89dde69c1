"""Inkling's processing parameters, validated in one place for the API and the family."""

from __future__ import annotations

from numbers import Integral
from typing import Any

from mm_framework.common import check_rescale_args
from mm_framework.errors import SpecError


def check_patch_size(patch_size: Any) -> int:
    """``patch_size`` as an int > 0, else :class:`SpecError` (the seed's message for 0)."""
    if not isinstance(patch_size, Integral) or isinstance(patch_size, bool):
        raise SpecError(f"patch_size must be an int, got {type(patch_size).__name__}")
    if patch_size <= 0:
        raise SpecError("patch_size must be greater than zero")
    return int(patch_size)


def check_rescale(rescale_frac: Any, rescale_cap: Any) -> tuple[float | None, int | None]:
    """The optional long-edge rescale, with the Inkling processor's rules.

    ``rescale_frac``: ``None`` (no rescale) or finite > 0. ``rescale_cap``: ``None`` or
    an int > 0, and only together with ``rescale_frac > 1``: the cap bounds growth, so a
    cap without growth is a configuration mistake (the Python processor's
    ``_validate_image_rescale`` rejects it too).
    """
    frac, cap = check_rescale_args(rescale_frac, rescale_cap)
    if cap is not None and (frac is None or frac <= 1):
        raise SpecError(
            f"rescale_cap requires rescale_frac > 1, got rescale_frac={rescale_frac!r} "
            f"(set rescale_cap to null/None when not upscaling)"
        )
    return frac, cap


def check_params(patch_size: Any, rescale_frac: Any, rescale_cap: Any) -> tuple[int, float | None, int | None]:
    return (check_patch_size(patch_size), *check_rescale(rescale_frac, rescale_cap))
