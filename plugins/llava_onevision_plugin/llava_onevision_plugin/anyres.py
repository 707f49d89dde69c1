"""Anyres geometry without pixels: the canvas, the fitted size, the crop grid, the tokens.

Every formula is transformers 5.24's, in its own float64 operation order, so the
truncations and roundings land where transformers' do (docs/families/llava_onevision.md,
sections 3 and 7): ``select_best_resolution``, ``get_patch_output_size``,
``_get_padding_size`` and ``LlavaOnevisionProcessor._get_number_of_features``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from .spec import LlavaOnevisionSpec


@attrs.frozen
class AnyresPlan:
    """How one ``height`` x ``width`` image is tiled; also the item's geometry.

    ``best``: the chosen pinpoint ``(H, W)``; ``fitted``: the aspect-preserving size
    ``(h, w)`` the image is resized to inside it; ``offset``: where the fitted image sits
    on the zero-padded canvas ``(top, left)``; ``grid``: crops ``(rows, cols)``;
    ``tokens``: the placeholder count the processor expands ``<image>`` to.
    """

    height: int
    width: int
    best: tuple[int, int]
    fitted: tuple[int, int]
    offset: tuple[int, int]
    grid: tuple[int, int]
    tokens: int

    @property
    def canvas(self) -> tuple[int, int]:
        """``(width, height)`` of the padded canvas the crops are cut from: the pinpoint."""
        return self.best[1], self.best[0]

    @property
    def patches(self) -> int:
        """Base image plus crops."""
        return 1 + self.grid[0] * self.grid[1]


def best_resolution(height: int, width: int, pinpoints: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """``select_best_resolution``: most effective pixels, then least waste; ties keep the first.

    The first pinpoint always beats the start (no effective pixels, infinite waste), so a
    strip too thin to keep a pixel anywhere still gets one.
    """
    best = pinpoints[0]
    most_effective, least_wasted = 0, math.inf
    for h, w in pinpoints:
        scale = min(w / width, h / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        wasted = h * w - effective
        if effective > most_effective or (effective == most_effective and wasted < least_wasted):
            most_effective, least_wasted, best = effective, wasted, (h, w)
    return best


def fitted_size(height: int, width: int, target: tuple[int, int]) -> tuple[int, int]:
    """``get_patch_output_size``: the largest aspect-preserving size inside ``target``."""
    th, tw = target
    scale_w, scale_h = tw / width, th / height
    if scale_w < scale_h:
        return min(math.ceil(height * scale_w), th), tw
    return th, min(math.ceil(width * scale_h), tw)


def feature_count(spec: LlavaOnevisionSpec, height: int, width: int, best: tuple[int, int]) -> int:
    """``_get_number_of_features`` (minus the CLS slot for the ``"default"`` strategy)."""
    side = spec.patches_per_side
    rows, cols = side * (best[0] // spec.image_size), side * (best[1] // spec.image_size)
    # Unpad: drop the feature rows (or columns) that only saw canvas padding.
    if width / height > cols / rows:
        kept = int(round(height * (cols / width), 7))
        rows -= 2 * ((rows - kept) // 2)
    else:
        kept = int(round(width * (rows / height), 7))
        cols -= 2 * ((cols - kept) // 2)
    unpadded, newlines = rows * cols, rows
    # vision_aspect_ratio cap: the model pools the unpadded features down to about
    # anyres_max_N base images.
    ratio = math.sqrt(rows * cols / (spec.max_num_patches * side**2))
    if ratio > 1.1:
        unpadded = int(rows // ratio) * int(cols // ratio)
        newlines = int(rows // ratio)
    tokens = unpadded + newlines + spec.num_image_tokens
    return tokens - 1 if spec.vision_feature_select_strategy == "default" else tokens


def plan(spec: LlavaOnevisionSpec, width: int, height: int) -> AnyresPlan:
    """The anyres plan of a ``width`` x ``height`` image."""
    best = best_resolution(height, width, spec.image_grid_pinpoints)
    fitted = fitted_size(height, width, best)
    # np.pad placement of _pad_for_patching: centred, the odd pixel at the bottom/right.
    offset = ((best[0] - fitted[0]) // 2, (best[1] - fitted[1]) // 2)
    grid = (best[0] // spec.image_size, best[1] // spec.image_size)
    return AnyresPlan(height, width, best, fitted, offset, grid, feature_count(spec, height, width, best))
