"""Sizing: the output size a family resizes to, in each reference's exact f64 arithmetic.

Python floats are IEEE f64, as in the references, and ``round`` is half-to-even as in
Python itself, so these are exact by construction (docs/architecture.md, "Sizing").
"""

from __future__ import annotations

import math

from ..errors import MediaError, SpecError


def smart_resize(h: int, w: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Target ``(h, w)`` for Qwen-VL style resizing, exactly as transformers 5.24.0.

    Mirrors ``transformers.models.qwen2_vl.image_processing_pil_qwen2_vl.smart_resize``
    (f64 math, Python ``round`` = half-to-even, ``h/beta/f`` evaluation order):

    - ``h_bar = round(h/f)*f`` (no lower clamp here, so a side <= f/2 rounds to 0 and
      then usually takes the upscale branch);
    - above ``max_pixels``: ``max(f, floor(side/beta/f)*f)`` with ``beta = sqrt(h*w/max)``;
    - else below ``min_pixels``: ``ceil(side*beta/f)*f`` with ``beta = sqrt(min/(h*w))``.

    This deliberately follows HF, not the sglang crate's formula (which clamps the first
    step with ``max(f, ·)`` and not the floor step). The two differ only for very thin
    images (docs/architecture.md, "Sizing"; HF values are pinned in the tests). Where HF
    would go on to fail (zero side, empty image, ratio above 200) this raises
    :class:`MediaError` instead.
    """
    if factor <= 0 or max_pixels <= 0 or min_pixels < 0:
        raise SpecError(
            f"smart_resize: factor and max_pixels must be positive and min_pixels non-negative, "
            f"got factor={factor} min_pixels={min_pixels} max_pixels={max_pixels}"
        )
    if h <= 0 or w <= 0:
        raise MediaError(f"smart_resize: empty image ({h}x{w})")
    ratio = max(h, w) / min(h, w)
    if ratio > 200:
        raise MediaError(f"absolute aspect ratio must be smaller than 200, got {ratio}")
    h_bar = round(h / factor) * factor
    w_bar = round(w / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((h * w) / max_pixels)
        h_bar = max(factor, math.floor(h / beta / factor) * factor)
        w_bar = max(factor, math.floor(w / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        h_bar = math.ceil(h * beta / factor) * factor
        w_bar = math.ceil(w * beta / factor) * factor
    if h_bar <= 0 or w_bar <= 0:
        # Only reachable with min_pixels == 0; HF would fail later inside PIL.
        raise MediaError(
            f"smart_resize: {h}x{w} degenerates to {h_bar}x{w_bar} at min_pixels={min_pixels} "
            f"max_pixels={max_pixels}; image is too thin for this pixel budget"
        )
    return h_bar, w_bar


def scaled_dims(w: int, h: int, frac: float | None = None, cap: int | None = None) -> tuple[int, int]:
    """Long-edge rescale ``(w, h) -> (w', h')`` (Inkling; docs/architecture.md, "Sizing").

    ``target = long*frac``, capped at ``max(cap, long)`` so the cap only limits growth;
    each side becomes ``max(1, floor(side*ratio + 0.5))`` (round half up, f64).
    Unchanged when ``frac`` is None, the long side is 0, or the ratio is exactly 1.
    """
    long = max(w, h)
    if frac is None or long == 0:
        return w, h
    target = long * float(frac)
    if cap is not None:
        target = min(target, float(max(cap, long)))
    ratio = target / long
    if ratio == 1.0:
        return w, h
    return max(1, math.floor(w * ratio + 0.5)), max(1, math.floor(h * ratio + 0.5))
