/* The two separable fixed-point passes shared by the Pillow and ATen resizers
 * (docs/kernels.md, "Separable fixed-point passes").
 *
 * Every output byte is clip8((2^(P-1) + sum_j w_j * in_j) >> P) in int32. module.c has
 * checked that no partial sum can overflow, so the sum is exact and its order free:
 * the loops below are shaped for SIMD, not for the reference's loop order.
 */
#include <string.h>

#include "native.h"
#include "sums.h"
#include "tiles.h"

/* The weighted-sum body for this CPU, chosen once when the module loads. */
static mmf_sums_fn sums_impl = mmf_weighted_sums_c;

void mmf_resample_init(void) {
    mmf_sums_init();
    sums_impl = mmf_sums_for_cpu();
}

/* ---- vertical pass: output rows are weighted sums of whole input rows ---- */

void mmf_resample_vertical(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi) {
    const mmf_sums_job job = {
        .out = dst->data + (ptrdiff_t)lo * dst->stride,
        .out_step = (size_t)dst->stride,
        .in = src->data,
        .tap_step = src->stride,
        .bounds = t->bounds + 2 * (size_t)lo,
        .weights = t->weights + (size_t)lo * t->ksize,
        .ksize = t->ksize,
        .n_out = hi - lo,
        .precision = t->precision,
        .narrow = t->narrow,
        .lanes = (size_t)dst->width * dst->channels,
    };
    sums_impl(&job);
}

/* ---- horizontal pass: a block of rows is transposed so that it becomes a vertical pass ----
 *
 * A block is 16 RGB rows (lane group c = channel c) or 64 L rows (lane group g = rows
 * 16g..16g+15): 48 or 64 lanes. Its pixels are laid out source column by source column
 * (`cols`: lane 16*group + row), by 16 x 16 tile transposes; an output column is then a
 * weighted sum of whole lane vectors, like the vertical pass. Every 16 output columns
 * are transposed back and stored into the block's rows. */

enum { TILE = 16 };

static inline int block_lanes(int channels) {
    return channels == 1 ? 64 : 48;
}

/* The transposed block (`cols`, in_width x lanes) and its results (out_width x lanes). */
size_t mmf_horizontal_scratch(int in_width, int out_width, int channels) {
    return ((size_t)in_width + (size_t)out_width) * (size_t)block_lanes(channels);
}

/* Row `r` of the block, or its first row for the lanes past a short last block (their
 * results are computed but never stored). */
MMF_INLINE const uint8_t *block_row(const mmf_plane *p, int r0, int nrows, int r) {
    return p->data + (ptrdiff_t)(r0 + (r < nrows ? r : 0)) * p->stride;
}

MMF_INLINE void gather_columns(const mmf_plane *src, int r0, int nrows, uint8_t *cols, const int channels) {
    const int lanes = block_lanes(channels), groups = lanes / TILE;
    const int full = src->width / TILE * TILE;
    mmf_u8x16 t[3][TILE];
    for (int x0 = 0; x0 < full; x0 += TILE) {
        for (int g = 0; g < groups; g++) {
            if (channels == 3 && g > 0) {
                continue; /* all three channel groups come from one pass over the rows */
            }
            for (int r = 0; r < TILE; r++) {
                if (channels == 3) {
                    deinterleave3(block_row(src, r0, nrows, r) + x0 * 3, &t[0][r], &t[1][r], &t[2][r]);
                } else {
                    t[0][r] = load16(block_row(src, r0, nrows, g * TILE + r) + x0);
                }
            }
            for (int k = 0; k < (channels == 3 ? 3 : 1); k++) {
                transpose16(t[k]);
                for (int x = 0; x < TILE; x++) {
                    store16(cols + (size_t)(x0 + x) * lanes + (channels == 3 ? k : g) * TILE, t[k][x]);
                }
            }
        }
    }
    for (int lane = 0; lane < lanes; lane++) { /* the columns past the last whole tile */
        const int r = channels == 3 ? lane % TILE : lane, c = channels == 3 ? lane / TILE : 0;
        const uint8_t *in = block_row(src, r0, nrows, r);
        for (int x = full; x < src->width; x++) {
            cols[(size_t)x * lanes + lane] = in[x * channels + c];
        }
    }
}

/* Stores output columns [xx0, xx0 + n) of the block from `px` (n x lanes bytes). */
MMF_INLINE void scatter_columns(const mmf_plane *dst, int r0, int nrows, int xx0, int n, const uint8_t *px,
                                const int channels) {
    const int lanes = block_lanes(channels), groups = lanes / TILE;
    if (n == TILE) {
        mmf_u8x16 t[3][TILE];
        for (int g = 0; g < groups; g++) {
            mmf_u8x16 *tg = t[channels == 3 ? g : 0];
            for (int k = 0; k < TILE; k++) {
                tg[k] = load16(px + k * lanes + g * TILE);
            }
            transpose16(tg);
            if (channels == 1) {
                for (int r = 0; r < TILE && g * TILE + r < nrows; r++) {
                    store16(dst->data + (ptrdiff_t)(r0 + g * TILE + r) * dst->stride + xx0, tg[r]);
                }
            }
        }
        if (channels == 3) {
            for (int r = 0; r < nrows; r++) {
                interleave3(dst->data + (ptrdiff_t)(r0 + r) * dst->stride + xx0 * 3, t[0][r], t[1][r], t[2][r]);
            }
        }
        return;
    }
    for (int lane = 0; lane < lanes; lane++) {
        const int r = channels == 3 ? lane % TILE : lane, c = channels == 3 ? lane / TILE : 0;
        if (r < nrows) {
            uint8_t *out = dst->data + (ptrdiff_t)(r0 + r) * dst->stride;
            for (int k = 0; k < n; k++) {
                out[(xx0 + k) * channels + c] = px[k * lanes + lane];
            }
        }
    }
}

MMF_INLINE void horizontal_block(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int r0,
                                 int nrows, uint8_t *cols, const int channels) {
    const int lanes = block_lanes(channels);
    uint8_t *px = cols + (size_t)src->width * lanes;
    gather_columns(src, r0, nrows, cols, channels);
    const mmf_sums_job job = {
        .out = px,
        .out_step = (size_t)lanes,
        .in = cols,
        .tap_step = lanes,
        .bounds = t->bounds,
        .weights = t->weights,
        .ksize = t->ksize,
        .n_out = dst->width,
        .precision = t->precision,
        .narrow = t->narrow,
        .lanes = (size_t)lanes,
    };
    sums_impl(&job);
    for (int xx0 = 0; xx0 < dst->width; xx0 += TILE) {
        const int n = dst->width - xx0 < TILE ? dst->width - xx0 : TILE;
        scatter_columns(dst, r0, nrows, xx0, n, px + (size_t)xx0 * lanes, channels);
    }
}

MMF_HOT static void horizontal_rgb(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi,
                                   uint8_t *cols) {
    for (int r = lo; r < hi; r += TILE) {
        horizontal_block(src, dst, t, r, hi - r < TILE ? hi - r : TILE, cols, 3);
    }
}

MMF_HOT static void horizontal_l(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi,
                                 uint8_t *cols) {
    for (int r = lo; r < hi; r += 4 * TILE) {
        horizontal_block(src, dst, t, r, hi - r < 4 * TILE ? hi - r : 4 * TILE, cols, 1);
    }
}

void mmf_resample_horizontal(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi,
                             uint8_t *scratch) {
    if (src->channels == 1) {
        horizontal_l(src, dst, t, lo, hi, scratch);
    } else {
        horizontal_rgb(src, dst, t, lo, hi, scratch);
    }
}
