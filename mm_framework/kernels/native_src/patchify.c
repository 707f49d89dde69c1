/* Fused normalize + patchify kernels (docs/kernels.md, "Qwen-VL merged blocks" and
 * "Inkling bf16 patches"): each output value is looked up once in a per-channel table
 * and written straight into its final position; nothing is built and then reordered.
 */
#include <string.h>

#include "native.h"
#include "tiles.h"

/* The Qwen-VL layout, one merge-window row at a time: its ps * merge source rows of each
 * frame are first split into R, G and B planes (16 pixels per vector step, into scratch
 * that stays in cache), then the output is written in order, patch after patch, each
 * patch row of a channel a short contiguous copy (uint8) or ps table lookups (f32). Slots
 * past the frames given repeat frame 0 (a still image fills every slot, as the reference
 * repeats it). */

/* n bytes (n >= 8) as 8-byte moves, the last one overlapping: no call to memcpy. */
MMF_INLINE void copy_run(uint8_t *dst, const uint8_t *src, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(dst + i, src + i, 8);
    }
    if (i < n) {
        memcpy(dst + n - 8, src + n - 8, 8);
    }
}

/* n bytes as 16-byte moves: reads and writes up to 15 bytes past n. */
MMF_INLINE void copy_over(uint8_t *dst, const uint8_t *src, int n) {
    for (int i = 0; i < n; i += 16) {
        store16(dst + i, load16(src + i));
    }
}

/* One ps x ps plane: rows of `src` `pitch` apart, as uint8 or through `lut`. A uint8 row
 * but the last is copied in 16-byte moves whose excess the next row overwrites (it is
 * shorter than a row for ps >= 8); the last row is exact, so nothing past the plane is
 * written. Reads reach up to 15 bytes past a row, within `planes` (15 bytes of slack). */
MMF_INLINE void qwen_plane(const uint8_t *src, size_t pitch, int ps, const void *lut, int elem, void *out) {
    for (int py = 0; py < ps; py++, src += pitch) {
        if (elem == 4) {
            const float *l = lut;
            float *o = (float *)out + (size_t)py * ps;
            for (int k = 0; k < ps; k++) {
                o[k] = l[src[k]];
            }
        } else if (elem == 2) {
            const uint16_t *l = lut;
            uint16_t *o = (uint16_t *)out + (size_t)py * ps;
            for (int k = 0; k < ps; k++) {
                o[k] = l[src[k]];
            }
        } else if (ps >= 8 && py + 1 < ps) {
            copy_over((uint8_t *)out + (size_t)py * ps, src, ps);
        } else if (ps >= 8) {
            copy_run((uint8_t *)out + (size_t)py * ps, src, ps);
        } else {
            memcpy((uint8_t *)out + (size_t)py * ps, src, (size_t)ps);
        }
    }
}

MMF_HOT static void qwen_rows(const mmf_qwen_job *j, int lo, int hi) {
    const int ps = j->ps, merge = j->merge, step = ps * merge, p2 = ps * ps;
    const int bw = j->width / step;
    const size_t pitch = (size_t)j->width, plane = pitch * step, frame_planes = 3 * plane;
    const int elem = j->lut ? j->lut_bytes : 1;
    const size_t row_values = (size_t)3 * j->tps * p2;
    for (int by = lo; by < hi; by++) {
        for (int t = 0; t < j->n_frames; t++) {
            const uint8_t *frame = j->frames + t * j->frame_stride + (ptrdiff_t)by * step * j->row_stride;
            uint8_t *r = j->planes + t * frame_planes;
            for (int y = 0; y < step; y++) {
                split_row(frame + (ptrdiff_t)y * j->row_stride, j->width, r + y * pitch, r + plane + y * pitch,
                          r + 2 * plane + y * pitch);
            }
        }
        for (int bx = 0; bx < bw; bx++) {
            for (int my = 0; my < merge; my++) {
                for (int mx = 0; mx < merge; mx++) {
                    const size_t row = (((size_t)by * bw + bx) * merge + my) * merge + mx;
                    uint8_t *out = (uint8_t *)j->out + row * row_values * elem;
                    const size_t at = (size_t)my * ps * pitch + (size_t)(bx * step + mx * ps);
                    for (int c = 0; c < 3; c++) {
                        const void *lut = j->lut ? (const uint8_t *)j->lut + (size_t)256 * c * elem : NULL;
                        for (int s = 0; s < j->tps; s++) {
                            void *o = out + ((size_t)c * j->tps + s) * p2 * elem;
                            if (s >= j->n_frames) {
                                memcpy(o, out + (size_t)c * j->tps * p2 * elem, p2 * elem);
                                continue;
                            }
                            qwen_plane(j->planes + s * frame_planes + c * plane + at, pitch, ps, lut, elem, o);
                        }
                    }
                }
            }
        }
    }
}

void mmf_patchify_qwen(const mmf_qwen_job *j, int lo, int hi) {
    qwen_rows(j, lo, hi);
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

/* Rows [lo, hi) of HWC u8 pixels split into the [3, h, w] planes `out` (docs/kernels.md,
 * "Planes"): split_row's 16-pixel deinterleave, row by row. */
MMF_HOT void mmf_planes_u8(const mmf_plane *img, uint8_t *out, int lo, int hi) {
    const size_t plane = (size_t)img->rows * img->width;
    for (int y = lo; y < hi; y++) {
        uint8_t *r = out + (size_t)y * img->width;
        split_row(img->data + (ptrdiff_t)y * img->stride, img->width, r, r + plane, r + 2 * plane);
    }
}
