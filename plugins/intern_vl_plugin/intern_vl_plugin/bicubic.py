"""torch's float bicubic resize (``F.interpolate(mode="bicubic", align_corners=False)``) in numpy.

The contract is parity with torch on CPU within rtol 1e-6 / atol 1e-5 (docs/families/intern_vl.md).
This follows ATen's kernel (``upsample_generic_Nd_kernel_impl`` with
``HelperInterpCubic``, aten/src/ATen/native/cpu/UpSampleKernel.cpp and UpSample.h) step
by step, so the only differences left are single roundings:

* **Weights** are bit-exact with torch 2.13's AVX2 kernel. Per axis, in float32:
  ``scale = in / out``; ``src = scale * (o + 0.5) - 0.5`` (no clamp for cubic);
  ``i = min(floor(src), in - 1)``; ``t = clamp(src - i, 0, 1)``; taps ``i - 1 .. i + 2``
  clamped to ``[0, in - 1]``; weights ``cc2(t + 1), cc1(t), cc1(1 - t), cc2((1 - t) + 1)``
  with ``A = -0.75``. The compiler contracts some of these multiply-adds into FMAs
  (found by matching torch's weights over ~1000 size pairs), reproduced here with a
  correctly rounded FMA emulated in float64: the weight vectors are O(output size), so
  that costs nothing.
* **Accumulation** follows torch's order, height outer and width inner, each as
  ``((v1*w1 + v0*w0) + v2*w2) + v3*w3`` (the first product torch fuses is ``v0*w0``, so
  ``v1*w1`` is the one rounded alone), with the inner sum rounded to float32 before the
  outer pass, exactly as torch's nested ``Interpolate`` structs do. torch fuses the three
  adds into FMAs; doing the same in numpy means float64 temporaries and costs twice the
  time of this float32 path, for differences of one float32 rounding (observed max
  ~1e-6 on normalized pixels, 10x inside atol). Such FMA contraction is also a property
  of the torch build (AVX2 vs AVX-512 vs ARM kernels), so the last bit is not a stable
  target anyway; the tolerance is.

The separable form computes the same numbers as torch's per-pixel 4x4 evaluation: the
inner (width) sums torch evaluates for a given input row and output column do not depend
on the output row, so they are computed once per input row here.
"""

from __future__ import annotations

import attrs
import numpy as np

from mm_framework.kernels import for_chunks

_F32 = np.float32
_F64 = np.float64
_A = _F32(-0.75)
# Rows per fan-out window: ~256 KiB of float32 per temporary, so a window's working set
# stays in L2 and large images still split into enough windows to share the pool.
_WINDOW_ELEMENTS = 1 << 16
# Order in which torch accumulates the four taps (see the module docstring).
_TAP_ORDER = (1, 0, 2, 3)


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32 ``a * b + c`` rounded once, as a hardware FMA.

    The float64 product of two float32 values is exact; the float64 sum is made
    round-to-odd (TwoSum error term, then nudge an inexact even result one ulp towards
    the error), after which a single rounding to float32 is the correctly rounded result.
    """
    p = a.astype(_F64) * b.astype(_F64)
    c64 = np.broadcast_to(np.asarray(c, dtype=_F32), p.shape).astype(_F64)
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    inexact_even = (err != 0) & ((s.view(np.int64) & 1) == 0)
    s = np.where(inexact_even, np.nextafter(s, np.copysign(np.inf, err)), s)
    return s.astype(_F32)


def _cc1(x: np.ndarray) -> np.ndarray:
    """``((A + 2) x - (A + 3)) x x + 1``; torch's rounding (fusing the first step or not agrees)."""
    return (((_F32(1.25) * x - _F32(2.25)) * x) * x + _F32(1)).astype(_F32)


def _cc2(x: np.ndarray) -> np.ndarray:
    """``((A x - 5A) x + 8A) x - 4A`` with torch's two fused steps."""
    inner = _fma(_fma(np.full_like(x, _A), x, _F32(3.75)), x, _F32(-6.0))
    return (inner * x + _F32(3.0)).astype(_F32)


@attrs.frozen(eq=False)
class AxisWeights:
    """The four taps of every output position along one axis.

    ``index[k, o]`` is the (clamped) input position of tap ``k`` for output ``o`` and
    ``weight[k, o]`` its float32 weight. ``identity`` marks ``in == out``, where the
    weights are exactly ``(0, 1, 0, 0)`` and the pass reproduces its input (up to the
    sign of a zero), so it is skipped.
    """

    index: np.ndarray
    weight: np.ndarray
    identity: bool


def axis_weights(n_in: int, n_out: int) -> AxisWeights:
    """torch's cubic indices and weights for resizing an axis from ``n_in`` to ``n_out``."""
    scale = _F32(n_in) / _F32(n_out)
    centers = np.arange(n_out, dtype=_F32) + _F32(0.5)
    src = _fma(np.full_like(centers, scale), centers, _F32(-0.5))
    base = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - base.astype(_F32), _F32(0), _F32(1)).astype(_F32)
    u = (_F32(1) - t).astype(_F32)
    weight = np.stack([_cc2((t + _F32(1)).astype(_F32)), _cc1(t), _cc1(u), _cc2((u + _F32(1)).astype(_F32))])
    index = np.clip(base[None, :] + np.arange(-1, 3)[:, None], 0, n_in - 1).astype(np.intp)
    return AxisWeights(index, np.ascontiguousarray(weight, dtype=_F32), n_in == n_out)


def _accumulate(taps: list[np.ndarray], weights: list[np.ndarray], out: np.ndarray) -> None:
    """``out = ((t1*w1 + t0*w0) + t2*w2) + t3*w3`` in float32; consumes the ``taps`` buffers."""
    first, *rest = _TAP_ORDER
    np.multiply(taps[first], weights[first], out=out)
    for k in rest:
        np.multiply(taps[k], weights[k], out=taps[k])
        np.add(out, taps[k], out=out)


def _window(width: int) -> int:
    return max(1, _WINDOW_ELEMENTS // width)


def _resize_width(src: np.ndarray, ax: AxisWeights) -> np.ndarray:
    """Width pass over the rows of ``src`` ``[R, W]``: ``[R, out_w]`` float32."""
    if ax.identity:
        return src
    rows, out_w = src.shape[0], ax.index.shape[1]
    out = np.empty((rows, out_w), dtype=_F32)

    def run(a: int, b: int) -> None:
        taps = [np.take(src[a:b], ax.index[k], axis=1) for k in range(4)]
        _accumulate(taps, list(ax.weight), out[a:b])

    for_chunks(run, rows, _window(out_w))
    return out


def resize_to_tiles(image: np.ndarray, cols: int, rows: int, size: int, out: np.ndarray) -> None:
    """Resize ``image`` ``[C, H, W]`` to ``(rows * size, cols * size)``, cut row-major into tiles.

    ``out`` is ``[rows * cols, C, size, size]`` float32; tile ``b`` is the block at tile
    row ``b // cols`` and tile column ``b % cols``. The height pass writes each output row
    straight into its tiles, so the full resized image is never materialized.
    """
    if not out.flags.c_contiguous:
        # The tile view below is a reshape; on a strided array it would be a copy and
        # every write would be lost.
        raise ValueError("resize_to_tiles: out must be C-contiguous")
    channels, height, width = image.shape
    out_h, out_w = rows * size, cols * size
    ax_w = axis_weights(width, out_w)
    ax_h = axis_weights(height, out_h)
    # One row per (channel, input row): the width pass is the same for every channel.
    narrow = _resize_width(image.reshape(channels * height, width), ax_w)
    # out viewed as [tile row, tile col, C, y, x]; an output row (c, oy) lands in
    # out5[oy // size, :, c, oy % size, :], i.e. a [cols, size] slab.
    out5 = out.reshape(rows, cols, channels, size, size)

    def run(a: int, b: int) -> None:
        # [a, b) counts output rows channel-major (c * out_h + oy); split it where the
        # destination slab changes (channel or tile row).
        while a < b:
            c, oy = divmod(a, out_h)
            tile_row, y = divmod(oy, size)
            n = min(b - a, size - y)
            dest = out5[tile_row, :, c, y : y + n, :].transpose(1, 0, 2)
            src_rows = c * height + ax_h.index[:, oy : oy + n]
            if ax_h.identity:
                np.copyto(dest, narrow[src_rows[1]].reshape(n, cols, size))
            else:
                taps = [narrow[src_rows[k]].reshape(n, cols, size) for k in range(4)]
                _accumulate(taps, [ax_h.weight[k, oy : oy + n, None, None] for k in range(4)], dest)
            a += n

    for_chunks(run, channels * out_h, _window(out_w))
