"""Inkling's patchify: u8 RGB -> bf16 bit patterns in ``[n, ps, ps, 3]`` patch layout.

Value at image pixel ``(y, x)``, channel ``c`` (docs/families/inkling.md), all in float32:
``bf16((f32(v) * f32(1/255) - MEAN[c]) / STD[c])``, bf16 by round-to-nearest-even,
returned as the raw ``uint16`` bit pattern. Outside the image (the bottom rows up to a
whole patch, the right columns up to ``(w // ps + 1) * ps``: there is **always** one
extra patch column, even when ``w % ps == 0``) the value is ``bf16((f32(-1/255) -
MEAN[c]) / STD[c])``, bits ``0xBFE7, 0xBFE2, 0xBFBF``.

How it is fast without float intermediates: the value is a per-channel function of the
u8 input, so a table is exact. Consecutive byte pairs of an RGB row are one of three
channel pairs ``(R,G), (B,R), (G,B)`` in a fixed cycle, so one ``uint32`` table with
``3 x 65536`` entries maps a byte pair (plus its cycle offset) to two output values at
once: half the gathers of a per-channel table, and contiguous. The gather writes the
final patch layout directly (the index array is built in that layout); pad positions are
then overwritten with the pad bits. Odd patch sizes (a patch row is then an odd number
of values, so pairs would straddle patch rows) and big-endian hosts use the plain
per-channel table. Work is split over bands of patch rows on the ``par`` seam; each band
writes only its own output rows, so the result is identical for any thread count.
"""

from __future__ import annotations

import sys

import numpy as np

from mm_framework.kernels import for_chunks, kernel_mode, normalize_lut_recip, patchify_bf16, rows_per_worker

MEAN = (0.48145466, 0.4578275, 0.40821073)
# Not CLIP's 0.26130258 / 0.27577711: these are the Inkling processor's literals.
STD = (0.26862954, 0.2613026, 0.2757771)


def bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even) and return the bit patterns.

    Same result as ``torch.Tensor.to(torch.bfloat16)`` for finite inputs (all this module
    produces): add ``0x7FFF`` plus the lowest kept bit, then drop the low 16 bits.
    """
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + (np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1)))) >> 16).astype(np.uint16)


# [3, 256] bf16 bits per channel and input value; the f32 arithmetic is the core's
# "recip" table (multiply by f32(1/255), subtract, divide).
LUT = bf16_bits(normalize_lut_recip(MEAN, STD))
PAD_BITS = bf16_bits(
    (np.float32(-1 / 255) - np.asarray(MEAN, dtype=np.float32)) / np.asarray(STD, dtype=np.float32)
)
LUT.flags.writeable = False
PAD_BITS.flags.writeable = False

_PAIR_CHANNELS = ((0, 1), (2, 0), (1, 2))  # channels of byte pairs 0, 1, 2 of every 6 bytes
_PAIRS_OK = sys.byteorder == "little"  # the pair table assumes little-endian u16/u32 views


def _pair_table() -> np.ndarray:
    """``uint32 [3 * 65536]``: entry ``k*65536 + (lo | hi << 8)`` holds the two values of a
    type-``k`` byte pair, first value in the low half (little-endian output order)."""
    v = np.arange(65536, dtype=np.uint32)
    lo, hi = v & 0xFF, v >> 8
    table = np.concatenate(
        [LUT[a][lo].astype(np.uint32) | (LUT[b][hi].astype(np.uint32) << 16) for a, b in _PAIR_CHANNELS]
    )
    table.flags.writeable = False
    return table


_PAIR_TABLE = _pair_table() if _PAIRS_OK else None

# Output values per band. Smaller bands keep more of a band's source, index and output
# in cache: for 40-pixel patches 2^17 (one patch row of a 2048-wide image) measured 8%
# faster than 2^19 on 1-12 MP images, and 2^16 no faster.
_BAND_VALUES = 1 << 17


def patch_grid(h: int, w: int, ps: int) -> tuple[int, int]:
    """``(nph, npw) = (ceil(h/ps), w//ps + 1)``: rows padded up, always one extra column."""
    return -(-h // ps), w // ps + 1


def patchify(rgb: np.ndarray, ps: int) -> np.ndarray:
    """bf16 bits ``uint16 [nph*npw, ps, ps, 3]`` of a validated HWC uint8 image.

    ``rgb`` may be any HWC uint8 view (read-only or strided); ``ps`` > 0. With the core's
    native kernels active, its C kernel writes the same bits from the same tables; the
    numpy code below is the portable path and the oracle it is tested against.
    """
    if kernel_mode() == "native":
        return patchify_bf16(rgb, LUT, PAD_BITS, ps)
    h, w = int(rgb.shape[0]), int(rgb.shape[1])
    nph, npw = patch_grid(h, w, ps)
    out = np.empty((nph, npw, ps, ps, 3), dtype=np.uint16)
    use_pairs = _PAIRS_OK and ps % 2 == 0
    band = max(1, _BAND_VALUES // (npw * ps * ps * 3))

    def rows(start: int, stop: int) -> None:
        for i in range(start, stop, band):
            _fill_band(rgb, out, i, min(i + band, stop), ps, use_pairs)

    for_chunks(rows, nph, max(band, rows_per_worker(nph, h * w)))
    return out.reshape(nph * npw, ps, ps, 3)


def _fill_band(rgb: np.ndarray, out: np.ndarray, i0: int, i1: int, ps: int, use_pairs: bool) -> None:
    """Write patch rows ``i0:i1`` of ``out`` (``[nph, npw, ps, ps, 3]``)."""
    h, w = int(rgb.shape[0]), int(rgb.shape[1])
    nb, npw = i1 - i0, out.shape[1]
    y0, y1 = i0 * ps, min(i1 * ps, h)
    n_rows = y1 - y0
    # The band's source on the padded canvas; margins are zero (their outputs are
    # overwritten with the pad bits below) so every index stays in range.
    src = np.empty((nb * ps, npw * ps, 3), dtype=np.uint8)
    src[:n_rows, :w] = rgb[y0:y1]
    src[:n_rows, w:] = 0
    src[n_rows:] = 0
    dst = out[i0:i1]
    if use_pairs:
        q = ps * 3 // 2  # byte pairs per patch row, a whole number of 3-pair cycles
        pairs = src.reshape(nb, ps, npw, ps * 3).view(np.uint16).transpose(0, 2, 1, 3)
        idx = np.empty((nb, npw, ps, q), dtype=np.uint32)
        np.add(pairs, _cycle_offsets(q), out=idx)
        # Every index is in range by construction; "wrap" only skips the bounds buffering.
        np.take(_PAIR_TABLE, idx.reshape(-1), out=dst.reshape(-1).view(np.uint32), mode="wrap")
    else:
        s = src.reshape(nb, ps, npw, ps, 3)
        d = dst.transpose(0, 2, 1, 3, 4)
        for c in range(3):
            np.take(LUT[c], s[..., c], out=d[..., c], mode="wrap")
    dst[:, -1, :, w - (npw - 1) * ps :] = PAD_BITS
    if n_rows < nb * ps:
        dst[-1, :, n_rows - (nb - 1) * ps :] = PAD_BITS


def _cycle_offsets(q: int) -> np.ndarray:
    return np.tile(np.array([0, 65536, 2 * 65536], dtype=np.uint32), q // 3)
