/* Fused normalize + patchify kernels (docs/kernels.md, "Qwen-VL merged blocks" and
 * "Inkling bf16 patches"): each output value is looked up once in a per-channel table
 * and written straight into its final position; nothing is built and then reordered.
 */
#include <string.h>

#include "native.h"

/* One patch row of the output: for each channel c and temporal slot t, a ps x ps plane
 * of VALUE(c, pixel) (lut[c][pixel], or the pixel itself for uint8 patches); slots past
 * the frames given copy slot 0 (a single still frame is repeated, as the reference repeats
 * it). One body for both element types, so the two layouts cannot drift apart; channel
 * planes outermost measured fastest for f32 (one table and one write stream at a time). */
#define QWEN_PATCH(NAME, TYPE, VALUE)                                                                   \
    MMF_HOT static void NAME(const mmf_qwen_job *j, int y0, int x0, TYPE *out) {                      \
        const int ps = j->ps, p2 = ps * ps;                                                             \
        for (int c = 0; c < 3; c++) {                                                                   \
            TYPE *plane0 = out + (size_t)c * j->tps * p2;                                               \
            for (int t = 0; t < j->tps; t++) {                                                          \
                TYPE *o = plane0 + (size_t)t * p2;                                                      \
                if (t >= j->n_frames) {                                                                 \
                    memcpy(o, plane0, sizeof(TYPE) * (size_t)p2);                                       \
                    continue;                                                                           \
                }                                                                                       \
                const uint8_t *frame = j->frames + t * j->frame_stride;                                 \
                for (int py = 0; py < ps; py++, o += ps) {                                              \
                    const uint8_t *in = frame + (ptrdiff_t)(y0 + py) * j->row_stride + (size_t)x0 * 3 + c; \
                    for (int px = 0; px < ps; px++) {                                                   \
                        o[px] = VALUE(c, in[3 * px]);                                                   \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }

#define TABLE_VALUE(c, v) j->lut[256 * (c) + (v)]
#define PIXEL_VALUE(c, v) (v)
QWEN_PATCH(qwen_patch_f32, float, TABLE_VALUE)
QWEN_PATCH(qwen_patch_u8, uint8_t, PIXEL_VALUE)

void mmf_patchify_qwen(const mmf_qwen_job *j, int lo, int hi) {
    const int step = j->ps * j->merge;
    const int bw = j->width / step;
    const size_t row_values = (size_t)3 * j->tps * j->ps * j->ps;
    for (int by = lo; by < hi; by++) {
        for (int bx = 0; bx < bw; bx++) {
            for (int my = 0; my < j->merge; my++) {
                for (int mx = 0; mx < j->merge; mx++) {
                    size_t row = (((size_t)by * bw + bx) * j->merge + my) * j->merge + mx;
                    int y0 = by * step + my * j->ps, x0 = bx * step + mx * j->ps;
                    if (j->lut) {
                        qwen_patch_f32(j, y0, x0, (float *)j->out + row * row_values);
                    } else {
                        qwen_patch_u8(j, y0, x0, (uint8_t *)j->out + row * row_values);
                    }
                }
            }
        }
    }
}

/* One row of pixels of one patch: `valid` image pixels, then pad up to ps. */
MMF_HOT static void bf16_patch_row(const uint8_t *in, int valid, int ps, const uint16_t *lut,
                                   const uint16_t *pad, uint16_t *o) {
    int px = 0;
    for (; px < valid; px++) {
        o[3 * px] = lut[in[3 * px]];
        o[3 * px + 1] = lut[256 + in[3 * px + 1]];
        o[3 * px + 2] = lut[512 + in[3 * px + 2]];
    }
    for (; px < ps; px++) {
        o[3 * px] = pad[0];
        o[3 * px + 1] = pad[1];
        o[3 * px + 2] = pad[2];
    }
}

void mmf_patchify_bf16(const mmf_bf16_job *j, int lo, int hi) {
    const int ps = j->ps;
    const int npw = j->width / ps + 1;
    const size_t patch_values = (size_t)ps * ps * 3;
    for (int i = lo; i < hi; i++) {
        uint16_t *patch = j->out + (size_t)i * npw * patch_values;
        for (int p = 0; p < npw; p++, patch += patch_values) {
            const int x0 = p * ps;
            const int valid_x = j->width - x0 < ps ? (j->width - x0 > 0 ? j->width - x0 : 0) : ps;
            for (int py = 0; py < ps; py++) {
                const int y = i * ps + py;
                const int valid = y < j->height ? valid_x : 0;
                /* Only a row with image pixels points into the image. */
                const uint8_t *in = valid ? j->rgb + (ptrdiff_t)y * j->row_stride + (size_t)x0 * 3 : j->rgb;
                bf16_patch_row(in, valid, ps, j->lut, j->pad, patch + (size_t)py * ps * 3);
            }
        }
    }
}

/* Rows [lo, hi) of a [3, h, w] plane set through a [3][256] u16 table (docs/kernels.md,
 * "bf16 tables"): each output value is one lookup of its pixel's channel. */
void mmf_lut_chw_u16(const mmf_lut_chw_job *j, int lo, int hi) {
    const size_t plane = (size_t)j->height * j->width;
    const uint16_t *l0 = j->lut, *l1 = j->lut + 256, *l2 = j->lut + 512;
    for (int y = lo; y < hi; y++) {
        const uint8_t *in = j->rgb + (ptrdiff_t)y * j->row_stride;
        uint16_t *o0 = j->out + (size_t)y * j->width, *o1 = o0 + plane, *o2 = o1 + plane;
        for (int x = 0; x < j->width; x++) {
            o0[x] = l0[in[3 * x]];
            o1[x] = l1[in[3 * x + 1]];
            o2[x] = l2[in[3 * x + 2]];
        }
    }
}
