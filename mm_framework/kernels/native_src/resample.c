/* The two separable fixed-point passes shared by the Pillow and ATen resizers
 * (docs/kernels.md, "Separable fixed-point passes").
 *
 * Every output byte is clip8((2^(P-1) + sum_j w_j * in_j) >> P) in int32. module.c has
 * checked that no partial sum can overflow, so the sum is exact and its order free:
 * the loops below are shaped for SIMD, not for the reference's loop order.
 */
#include <string.h>

#include "native.h"
#include "tiles.h"

static inline uint8_t clip8(int32_t acc, int precision) {
    int32_t v = acc >> precision; /* arithmetic shift: floor, as the references */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* ---- vertical pass: every byte of a row is independent, so whole rows vectorise ---- */

enum { V_CHUNK = 1024 }; /* int32 accumulators per chunk of a row (4 KiB, stays in L1) */

MMF_HOT static void vertical_rows(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo,
                                  int hi) {
    const int32_t bias = (int32_t)1 << (t->precision - 1);
    const int shift = t->precision;
    const size_t row_bytes = (size_t)dst->width * dst->channels;
    int32_t acc[V_CHUNK];
    for (int y = lo; y < hi; y++) {
        const int32_t start = t->bounds[2 * y], count = t->bounds[2 * y + 1];
        const int32_t *w = t->weights + (size_t)y * t->ksize;
        const uint8_t *first = src->data + start * src->stride;
        uint8_t *out = dst->data + y * dst->stride;
        for (size_t off = 0; off < row_bytes; off += V_CHUNK) {
            const size_t n = row_bytes - off < V_CHUNK ? row_bytes - off : V_CHUNK;
            for (size_t i = 0; i < n; i++) {
                acc[i] = bias;
            }
            for (int32_t j = 0; j < count; j++) {
                const uint8_t *in = first + j * src->stride + off;
                const int32_t wj = w[j];
                for (size_t i = 0; i < n; i++) {
                    acc[i] += wj * in[i];
                }
            }
            for (size_t i = 0; i < n; i++) {
                out[off + i] = clip8(acc[i], shift);
            }
        }
    }
}

void mmf_resample_vertical(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi) {
    vertical_rows(src, dst, t, lo, hi);
}

/* ---- horizontal pass: a block of rows is transposed so that it becomes a vertical pass ----
 *
 * A block is 16 RGB rows (lane group c = channel c) or 64 L rows (lane group g = rows
 * 16g..16g+15): 48 or 64 lanes. Its pixels are laid out source column by source column
 * (`cols`: lane 16*group + row), by 16 x 16 tile transposes; an output column is then a
 * weighted sum of whole lane vectors, like the vertical pass. Every 16 output columns
 * are transposed back and stored into the block's rows. */

enum { TILE = 16, LANES_MAX = 64 };

static inline int block_lanes(int channels) {
    return channels == 1 ? 64 : 48;
}

size_t mmf_horizontal_scratch(int in_width, int out_width, int channels) {
    (void)out_width;
    return (size_t)in_width * (size_t)block_lanes(channels);
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
    const int32_t bias = (int32_t)1 << (t->precision - 1);
    const int shift = t->precision;
    gather_columns(src, r0, nrows, cols, channels);
    uint8_t px[TILE * LANES_MAX];
    for (int xx0 = 0; xx0 < dst->width; xx0 += TILE) {
        const int n = dst->width - xx0 < TILE ? dst->width - xx0 : TILE;
        for (int k = 0; k < n; k++) {
            const int xx = xx0 + k;
            const int32_t start = t->bounds[2 * xx], count = t->bounds[2 * xx + 1];
            const int32_t *w = t->weights + (size_t)xx * t->ksize;
            int32_t acc[LANES_MAX];
            for (int i = 0; i < lanes; i++) {
                acc[i] = bias;
            }
            for (int32_t j = 0; j < count; j++) {
                const uint8_t *in = cols + (size_t)(start + j) * lanes;
                const int32_t wj = w[j];
                for (int i = 0; i < lanes; i++) {
                    acc[i] += wj * in[i];
                }
            }
            for (int i = 0; i < lanes; i++) {
                px[k * lanes + i] = clip8(acc[i], shift);
            }
        }
        scatter_columns(dst, r0, nrows, xx0, n, px, channels);
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
