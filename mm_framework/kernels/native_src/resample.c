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
 * A block is 32 RGB rows (lane 32c + r: channel c of row r) or 64 L rows (lane r): 96 or
 * 64 lanes. Its pixels are laid out source column by source column (`cols`), by 16 x 16
 * tile transposes, two at a time as the halves of 32-byte vectors (rows r and r + 16); an
 * output column is then a weighted sum of whole lane vectors, like the vertical pass.
 * Every 16 output columns are transposed back and stored into the block's rows. RGB rows
 * are transposed as raw bytes, 48 (16 pixels) at a time: transposed byte b of those 48 is
 * channel b % 3 of pixel b / 3, stored whole at its lanes, so no shuffle ever separates
 * the channels. */

enum { TILE = 16, RGB_ROWS = 32, L_ROWS = 64 };

static inline int block_lanes(int channels) {
    return channels == 1 ? L_ROWS : 3 * RGB_ROWS;
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

/* The columns past the last whole tile, one byte at a time. */
MMF_INLINE void gather_tail(const mmf_plane *src, int r0, int nrows, uint8_t *cols, const int channels) {
    const int lanes = block_lanes(channels), full = src->width / TILE * TILE, rows = channels == 3 ? RGB_ROWS : L_ROWS;
    for (int lane = 0; lane < lanes; lane++) {
        const int r = lane % rows, c = lane / rows;
        const uint8_t *in = block_row(src, r0, nrows, r);
        for (int x = full; x < src->width; x++) {
            cols[(size_t)x * lanes + lane] = in[x * channels + c];
        }
    }
}

/* The rows are looked up once per block: computing each row's address at its load cost
 * the pass a tenth of its time. */
MMF_INLINE void gather_rgb(const mmf_plane *src, int r0, int nrows, uint8_t *cols) {
    const int lanes = block_lanes(3), full = src->width / TILE * TILE;
    const uint8_t *row[RGB_ROWS];
    for (int r = 0; r < RGB_ROWS; r++) {
        row[r] = block_row(src, r0, nrows, r);
    }
    mmf_u8x32 t[TILE];
    for (int x0 = 0; x0 < full; x0 += TILE) {
        for (int s = 0; s < 3; s++) {
            for (int r = 0; r < TILE; r++) {
                t[r] = join16(load16(row[r] + x0 * 3 + s * TILE), load16(row[r + TILE] + x0 * 3 + s * TILE));
            }
            transpose16x2(t);
            for (int k = 0; k < TILE; k++) {
                const int b = s * TILE + k;
                store32(cols + (size_t)(x0 + b / 3) * lanes + (b % 3) * RGB_ROWS, t[k]);
            }
        }
    }
    gather_tail(src, r0, nrows, cols, 3);
}

MMF_INLINE void gather_l(const mmf_plane *src, int r0, int nrows, uint8_t *cols) {
    const int lanes = block_lanes(1), full = src->width / TILE * TILE;
    mmf_u8x32 t[TILE];
    for (int x0 = 0; x0 < full; x0 += TILE) {
        for (int g = 0; g < L_ROWS; g += 2 * TILE) { /* row groups g and g + 16 as the two halves */
            for (int r = 0; r < TILE; r++) {
                t[r] = join16(load16(block_row(src, r0, nrows, g + r) + x0),
                              load16(block_row(src, r0, nrows, g + TILE + r) + x0));
            }
            transpose16x2(t);
            for (int x = 0; x < TILE; x++) {
                store32(cols + (size_t)(x0 + x) * lanes + g, t[x]);
            }
        }
    }
    gather_tail(src, r0, nrows, cols, 1);
}

/* Stores output columns [xx0, xx0 + n) of the block from `px` (n x lanes bytes), one byte
 * at a time: the last, partial group of columns. */
MMF_INLINE void scatter_tail(const mmf_plane *dst, int r0, int nrows, int xx0, int n, const uint8_t *px,
                             const int channels) {
    const int lanes = block_lanes(channels), rows = channels == 3 ? RGB_ROWS : L_ROWS;
    for (int lane = 0; lane < lanes; lane++) {
        const int r = lane % rows, c = lane / rows;
        if (r < nrows) {
            uint8_t *out = dst->data + (ptrdiff_t)(r0 + r) * dst->stride;
            for (int k = 0; k < n; k++) {
                out[(xx0 + k) * channels + c] = px[k * lanes + lane];
            }
        }
    }
}

/* 16 output columns [xx0, xx0 + 16) of an RGB block, gather_rgb backwards; `row` holds
 * the block's rows of dst. */
MMF_INLINE void scatter_rgb(uint8_t *const row[RGB_ROWS], int nrows, int xx0, const uint8_t *px) {
    const int lanes = block_lanes(3);
    mmf_u8x32 t[TILE];
    for (int s = 0; s < 3; s++) {
        for (int k = 0; k < TILE; k++) {
            const int b = s * TILE + k;
            t[k] = load32(px + (b / 3) * lanes + (b % 3) * RGB_ROWS);
        }
        transpose16x2(t);
        for (int r = 0; r < TILE && r < nrows; r++) {
            store16(row[r] + xx0 * 3 + s * TILE, low16(t[r]));
        }
        for (int r = 0; r < TILE && r + TILE < nrows; r++) {
            store16(row[r + TILE] + xx0 * 3 + s * TILE, high16(t[r]));
        }
    }
}

/* 16 output columns [xx0, xx0 + 16) of an L block. */
MMF_INLINE void scatter_l(const mmf_plane *dst, int r0, int nrows, int xx0, const uint8_t *px) {
    const int lanes = block_lanes(1);
    mmf_u8x32 t[TILE];
    for (int g = 0; g < L_ROWS; g += 2 * TILE) {
        for (int k = 0; k < TILE; k++) {
            t[k] = load32(px + k * lanes + g);
        }
        transpose16x2(t);
        for (int r = 0; r < TILE && g + r < nrows; r++) {
            store16(dst->data + (ptrdiff_t)(r0 + g + r) * dst->stride + xx0, low16(t[r]));
        }
        for (int r = 0; r < TILE && g + TILE + r < nrows; r++) {
            store16(dst->data + (ptrdiff_t)(r0 + g + TILE + r) * dst->stride + xx0, high16(t[r]));
        }
    }
}

MMF_INLINE void horizontal_block(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int r0,
                                 int nrows, uint8_t *cols, const int channels) {
    const int lanes = block_lanes(channels);
    uint8_t *px = cols + (size_t)src->width * lanes;
    if (channels == 3) {
        gather_rgb(src, r0, nrows, cols);
    } else {
        gather_l(src, r0, nrows, cols);
    }
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
    uint8_t *out_row[RGB_ROWS];
    for (int r = 0; channels == 3 && r < RGB_ROWS; r++) {
        out_row[r] = dst->data + (ptrdiff_t)(r0 + (r < nrows ? r : 0)) * dst->stride;
    }
    for (int xx0 = 0; xx0 < dst->width; xx0 += TILE) {
        const uint8_t *at = px + (size_t)xx0 * lanes;
        if (dst->width - xx0 < TILE) {
            scatter_tail(dst, r0, nrows, xx0, dst->width - xx0, at, channels);
        } else if (channels == 3) {
            scatter_rgb(out_row, nrows, xx0, at);
        } else {
            scatter_l(dst, r0, nrows, xx0, at);
        }
    }
}

MMF_HOT static void horizontal_rgb(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi,
                                   uint8_t *cols) {
    for (int r = lo; r < hi; r += RGB_ROWS) {
        horizontal_block(src, dst, t, r, hi - r < RGB_ROWS ? hi - r : RGB_ROWS, cols, 3);
    }
}

MMF_HOT static void horizontal_l(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi,
                                 uint8_t *cols) {
    for (int r = lo; r < hi; r += L_ROWS) {
        horizontal_block(src, dst, t, r, hi - r < L_ROWS ? hi - r : L_ROWS, cols, 1);
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
