"""The ``qwen_vl`` spec's qwen-vl-utils mode: ``process_vision_info`` before the processor.

Qwen's own serving recipe is ``qwen_vl_utils.process_vision_info(messages)`` (0.0.14) and then
the HF processor with the images it returns. Its ``fetch_image`` resizes each image with
Pillow (bicubic) to its own ``smart_resize`` of the message part's bounds, and the processor
then runs its usual resize on that image with the processor's bounds (the request's
``mm_processor_kwargs`` or the config): two resizes, the second one a no-op whenever the
first size lies within the processor's bounds (docs/chat.md, "qwen-vl-utils").

Spec fields (all optional; ``vision_info`` absent or null means the processor alone):

- ``vision_info``: ``"qwen_vl_utils"``;
- ``fetch_min_pixels`` / ``fetch_max_pixels``: ``fetch_image``'s bounds (a message part's
  ``min_pixels`` / ``max_pixels``), by default qwen-vl-utils' 4 and 16384 merged blocks;
- ``resized_height`` / ``resized_width``: a part's exact size, which ``fetch_image`` rounds
  with ``smart_resize`` at its default bounds; both or neither, and not with the bounds
  (qwen-vl-utils ignores one given alone, and the bounds beside them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from mm_framework.plugin import MediaError, SpecFields

VISION_INFO_FIELDS = ("vision_info", "fetch_min_pixels", "fetch_max_pixels", "resized_height", "resized_width")
# qwen-vl-utils' IMAGE_MIN_TOKEN_NUM / IMAGE_MAX_TOKEN_NUM and MAX_RATIO.
MIN_BLOCKS, MAX_BLOCKS, MAX_RATIO = 4, 16384, 200


@attrs.frozen
class VisionInfo:
    """The validated qwen-vl-utils fields: ``fetch_image``'s target for an image."""

    factor: int
    min_pixels: int
    max_pixels: int
    resized: tuple[int, int] | None = None  # (height, width)

    def fetch_size(self, height: int, width: int) -> tuple[int, int]:
        """``(height, width)`` ``fetch_image`` resizes a ``height`` x ``width`` image to."""
        if self.resized is not None:
            return fetch_smart_resize(*self.resized, self.factor, MIN_BLOCKS * self.factor**2,
                                      MAX_BLOCKS * self.factor**2)
        return fetch_smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)

    def to_dict(self) -> dict[str, Any]:
        default = (MIN_BLOCKS * self.factor**2, MAX_BLOCKS * self.factor**2)
        bounds = (self.min_pixels, self.max_pixels)
        return {
            "vision_info": "qwen_vl_utils",
            "fetch_min_pixels": None if bounds[0] == default[0] else bounds[0],
            "fetch_max_pixels": None if bounds[1] == default[1] else bounds[1],
            "resized_height": None if self.resized is None else self.resized[0],
            "resized_width": None if self.resized is None else self.resized[1],
        }


def fetch_smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """qwen-vl-utils 0.0.14's ``smart_resize``: transformers' (``mm_framework.kernels.smart_resize``)
    but with the rounded sides clamped to at least ``factor`` before the bound checks and the
    shrunk ones not clamped; where it would fail later (a side floored to 0) a ``MediaError``."""
    ratio = max(height, width) / min(height, width)
    if ratio > MAX_RATIO:
        raise MediaError(f"absolute aspect ratio must be smaller than {MAX_RATIO}, got {ratio}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    if h_bar <= 0 or w_bar <= 0:
        raise MediaError(f"qwen-vl-utils smart_resize: {height}x{width} shrinks to {h_bar}x{w_bar} at "
                         f"max_pixels={max_pixels} (Pillow would refuse the empty size)")
    return h_bar, w_bar


def parse_vision_info(
    f: SpecFields, params: Mapping[str, Any], factor: int, max_image_pixels: int
) -> VisionInfo | None:
    """The qwen-vl-utils fields of ``params`` read through ``f`` (which declared them all optional)."""
    present = [k for k in VISION_INFO_FIELDS[1:] if params.get(k) is not None]
    if params.get("vision_info") is None:
        if present:
            raise f.error(present[0], "is a qwen-vl-utils option (fetch_image): it needs vision_info "
                                      "'qwen_vl_utils' (transformers' processor has no such option)")
        return None
    f.choice("vision_info", ("qwen_vl_utils",))
    default_min, default_max = MIN_BLOCKS * factor**2, MAX_BLOCKS * factor**2
    height = f.integer("resized_height", minimum=1, maximum=max_image_pixels, nullable=True)
    width = f.integer("resized_width", minimum=1, maximum=max_image_pixels, nullable=True)
    lo = f.integer("fetch_min_pixels", minimum=1, maximum=max_image_pixels, nullable=True)
    hi = f.integer("fetch_max_pixels", minimum=factor**2, nullable=True)
    if (height is None) != (width is None):
        given, other = ("resized_height", "resized_width") if width is None else ("resized_width", "resized_height")
        raise f.error(given, f"needs {other!r} too (qwen-vl-utils would ignore it alone)")
    if height is not None and width is not None:
        if lo is not None or hi is not None:
            raise f.error(["resized_height", "fetch_min_pixels" if lo is not None else "fetch_max_pixels"],
                          "exclude each other (qwen-vl-utils ignores the pixel bounds beside an exact size)")
        if height * width > max_image_pixels:
            raise f.error(["resized_height", "resized_width"],
                          f"ask for {height * width} pixels, more than the {max_image_pixels} the core decodes")
        if max(height, width) / min(height, width) > MAX_RATIO:
            raise f.error(["resized_height", "resized_width"],
                          f"make an aspect ratio above {MAX_RATIO} ({height}x{width}), which smart_resize refuses")
        return VisionInfo(factor, default_min, default_max, (height, width))
    lo, hi = default_min if lo is None else lo, default_max if hi is None else hi
    if lo > hi:
        raise f.error(["fetch_min_pixels", "fetch_max_pixels"],
                      f"must hold min <= max, got {lo} > {hi} (qwen-vl-utils asserts it; its defaults are "
                      f"{default_min} and {default_max})")
    return VisionInfo(factor, lo, hi)
