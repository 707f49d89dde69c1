"""An independent, deliberately plain reference of Inkling's preprocessing.

Shares no code with ``inkling_plugin`` (or ``mm_framework``): the per-pixel formula is
evaluated over a whole float32 canvas the obvious way, and bf16 rounding is done by
comparing the two neighbouring bf16 values in float64, not by the bit trick the
implementation uses. ``generate_golden.py`` additionally checks the rounding against
``torch.Tensor.to(torch.bfloat16)`` when torch is importable.

Used by the golden generator and, for random inputs, directly by the tests.
"""

from __future__ import annotations

import io

import numpy as np

MEAN = np.array([0.48145466, 0.4578275, 0.40821073], dtype=np.float64).astype(np.float32)
STD = np.array([0.26862954, 0.2613026, 0.2757771], dtype=np.float64).astype(np.float32)
INV255 = np.float32(1.0 / 255.0)
PAD_RAW = np.float32(-1.0 / 255.0)


def bf16_round_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns, nearest with ties to even, by explicit comparison.

    The two candidates are the bf16 values just below and above ``|x|`` (the f32 with its
    low 16 bits cleared, and the next bf16 up); the nearer wins, a tie goes to the one
    whose last kept mantissa bit is 0. Finite inputs only.
    """
    x = np.asarray(x, dtype=np.float32)
    assert np.isfinite(x).all()
    u = x.view(np.uint32).astype(np.uint64)
    low = u & 0xFFFF0000
    high = low + 0x10000
    xv = x.astype(np.float64)
    lv = low.astype(np.uint32).view(np.float32).astype(np.float64)
    hv = high.astype(np.uint32).view(np.float32).astype(np.float64)
    d_low = np.abs(xv - lv)
    d_high = np.abs(hv - xv)
    low_is_even = ((low >> 16) & 1) == 0
    take_low = (d_low < d_high) | ((d_low == d_high) & low_is_even)
    return (np.where(take_low, low, high) >> 16).astype(np.uint16)


def normalized_canvas(arr: np.ndarray, ps: int) -> np.ndarray:
    """float32 ``[nph*ps, npw*ps, 3]``: ``(v*INV255 - MEAN)/STD`` inside, ``(PAD_RAW - MEAN)/STD`` outside.

    ``nph = ceil(h/ps)``, ``npw = w//ps + 1`` (one extra padded column, always).
    """
    h, w = arr.shape[:2]
    nph, npw = -(-h // ps), w // ps + 1
    raw = np.full((nph * ps, npw * ps, 3), PAD_RAW, dtype=np.float32)
    raw[:h, :w] = arr.astype(np.float32) * INV255
    out = (raw - MEAN) / STD
    assert out.dtype == np.float32
    return out


def ref_patches_f32(arr: np.ndarray, ps: int) -> np.ndarray:
    """float32 ``[n, ps, ps, 3]`` patches, row-major patch order, HWC inside a patch."""
    canvas = normalized_canvas(arr, ps)
    nph, npw = canvas.shape[0] // ps, canvas.shape[1] // ps
    return np.ascontiguousarray(canvas.reshape(nph, ps, npw, ps, 3).transpose(0, 2, 1, 3, 4)).reshape(-1, ps, ps, 3)


def ref_patchify(arr: np.ndarray, ps: int) -> np.ndarray:
    """uint16 bf16 bits ``[n, ps, ps, 3]``."""
    return bf16_round_bits(ref_patches_f32(arr, ps))


def ref_scaled_dims(w: int, h: int, frac: float | None, cap: int | None) -> tuple[int, int]:
    """The Python processor's long-edge rescale, written out (round half up via int(x + 0.5))."""
    if frac is None:
        return w, h
    long_edge = max(w, h)
    if long_edge == 0:
        return w, h
    target = long_edge * frac
    if cap is not None:
        target = min(target, max(cap, long_edge))
    scale = target / long_edge
    if scale == 1.0:
        return w, h
    return max(1, int(w * scale + 0.5)), max(1, int(h * scale + 0.5))


def ref_decode_rescale(data: bytes, frac: float | None, cap: int | None) -> np.ndarray:
    """PIL decode (``convert("RGB")``: alpha dropped, no EXIF), LANCZOS to ``ref_scaled_dims``."""
    from PIL import Image

    im = Image.open(io.BytesIO(data)).convert("RGB")
    w2, h2 = ref_scaled_dims(im.width, im.height, frac, cap)
    if (w2, h2) != im.size:
        im = im.resize((w2, h2), Image.Resampling.LANCZOS)
    return np.asarray(im)


def make_photo_like(h: int, w: int, seed: int) -> np.ndarray:
    """Smooth sinusoids per channel plus N(0, 12) noise in 8x8 blocks, clipped to uint8."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    base = np.stack(
        [
            127 + 100 * np.sin(yy / 97) * np.cos(xx / 131),
            127 + 100 * np.sin(yy / 61) * np.cos(xx / 89),
            127 + 100 * np.sin((xx + yy) / 149),
        ],
        axis=-1,
    )
    noise = np.kron(rng.normal(0, 12, size=(-(-h // 8), -(-w // 8), 3)), np.ones((8, 8, 1)))[:h, :w]
    return np.clip(base + noise, 0, 255).astype(np.uint8)
