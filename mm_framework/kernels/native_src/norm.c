/* Rescale + normalize programs into CHW planes (docs/kernels.md, "Normalize programs").
 *
 * A program is what kernels/norm.py's ChannelNorm runs with numpy ufuncs: x = f32(v), then
 * x = x op k_c for each step (op one of + - * /, k_c the step's float32 constant of
 * channel c). Each IEEE float32 operation is correctly rounded, the build contracts
 * nothing (-ffp-contract=off), and vector and scalar forms of one operation round alike,
 * so a program gives numpy's bits; the Python face still runs it on all 256 values of
 * every channel against the table before it uses it. Each step is its own loop over a
 * block of a row's channel (in L1), which the compiler vectorises. With `bf16` the result
 * is rounded to bfloat16 to nearest even, as torch's cast rounds (uint16 bits out). */
#include <string.h>

#include "native.h"
#include "tiles.h"

enum { BLOCK = 512 }; /* pixels of a row per pass of the steps */

/* x[i] = x[i] op k for i < n. */
MMF_INLINE void step(float *restrict x, int n, int op, float k) {
    switch (op) {
    case MMF_OP_ADD:
        for (int i = 0; i < n; i++) x[i] = x[i] + k;
        break;
    case MMF_OP_SUB:
        for (int i = 0; i < n; i++) x[i] = x[i] - k;
        break;
    case MMF_OP_MUL:
        for (int i = 0; i < n; i++) x[i] = x[i] * k;
        break;
    default:
        for (int i = 0; i < n; i++) x[i] = x[i] / k;
        break;
    }
}

MMF_HOT void mmf_norm_chw(const mmf_norm_job *j, int lo, int hi) {
    const size_t plane = (size_t)j->height * j->width;
    uint8_t v[3][BLOCK];
    float scratch[BLOCK];
    for (int y = lo; y < hi; y++) {
        const uint8_t *in = j->rgb + (ptrdiff_t)y * j->row_stride;
        for (int x0 = 0; x0 < j->width; x0 += BLOCK) {
            const int n = j->width - x0 < BLOCK ? j->width - x0 : BLOCK;
            split_row(in + 3 * (size_t)x0, n, v[0], v[1], v[2]);
            for (int c = 0; c < 3; c++) {
                const size_t at = c * plane + (size_t)y * j->width + x0;
                float *restrict x = j->bf16 ? scratch : (float *)j->out + at;
                for (int i = 0; i < n; i++) {
                    x[i] = (float)v[c][i];
                }
                for (int s = 0; s < j->n_steps; s++) {
                    step(x, n, j->ops[s], j->consts[3 * s + c]);
                }
                if (j->bf16) { /* to nearest even, as torch rounds float32 to bfloat16 */
                    uint16_t *restrict o = (uint16_t *)j->out + at;
                    const uint32_t *restrict u = (const uint32_t *)x; /* the build has -fno-strict-aliasing */
                    for (int i = 0; i < n; i++) {
                        o[i] = (uint16_t)((u[i] + 0x7FFFu + ((u[i] >> 16) & 1u)) >> 16);
                    }
                }
            }
        }
    }
}
