/* Weighted sums of byte lanes (sums.h): the portable body and the choice of body per CPU. */
#include "sums.h"

#include <stdlib.h>
#include <string.h>

static inline uint8_t clip8(int32_t acc, int precision) {
    int32_t v = acc >> precision; /* arithmetic shift: floor, as the references */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

enum { CHUNK = 1024 }; /* int32 accumulators per chunk of lanes (4 KiB, stays in L1) */

void mmf_weighted_sums_c(const mmf_sums_job *job) {
    const int32_t bias = (int32_t)1 << (job->precision - 1);
    int32_t acc[CHUNK];
    for (int o = 0; o < job->n_out; o++) {
        const int32_t start = job->bounds[2 * o], count = job->bounds[2 * o + 1];
        const int32_t *w = job->weights + (size_t)o * job->ksize;
        const uint8_t *first = job->in + start * job->tap_step;
        uint8_t *out = job->out + o * job->out_step;
        for (size_t off = 0; off < job->lanes; off += CHUNK) {
            const size_t n = job->lanes - off < CHUNK ? job->lanes - off : CHUNK;
            for (size_t i = 0; i < n; i++) {
                acc[i] = bias;
            }
            for (int32_t j = 0; j < count; j++) {
                const uint8_t *in = first + j * job->tap_step + off;
                const int32_t wj = w[j];
                for (size_t i = 0; i < n; i++) {
                    acc[i] += wj * in[i];
                }
            }
            for (size_t i = 0; i < n; i++) {
                out[off + i] = clip8(acc[i], job->precision);
            }
        }
    }
}

static int use_avx2;

/* MM_FRAMEWORK_SIMD=baseline keeps the portable body on an AVX2 CPU, so that its bytes
 * are tested there too (tests/kernels/test_native_baseline.py). */
void mmf_sums_init(void) {
    const char *forced = getenv("MM_FRAMEWORK_SIMD");
    use_avx2 = 0;
#ifdef MMF_HAVE_AVX2_SUMS
    __builtin_cpu_init();
    use_avx2 = __builtin_cpu_supports("avx2") && !(forced && strcmp(forced, "baseline") == 0);
#else
    (void)forced;
#endif
}

mmf_sums_fn mmf_sums_for_cpu(void) {
#ifdef MMF_HAVE_AVX2_SUMS
    if (use_avx2) {
        return mmf_weighted_sums_avx2;
    }
#endif
    return mmf_weighted_sums_c;
}

const char *mmf_simd_level(void) {
    return use_avx2 ? "avx2" : "baseline";
}
