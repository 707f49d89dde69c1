/* The inner kernel of both resample passes (docs/kernels.md, "Separable fixed-point
 * passes"): for outputs o < n_out and lanes i < lanes,
 *
 *   out[o * out_step + i] = clip8((2^(P-1) + sum_{j < count_o} w_o[j] * in[(start_o + j) * tap_step + i]) >> P)
 *
 * with (start_o, count_o) = bounds[2o, 2o+1] and w_o = weights + o * ksize. The vertical
 * pass calls it with rows as taps, the horizontal pass with the columns of a transposed
 * block. Callers have excluded int32 overflow (checks.c), so any summation order is exact.
 */
#ifndef MMF_SUMS_H
#define MMF_SUMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *out;
    size_t out_step;
    const uint8_t *in;
    ptrdiff_t tap_step;
    const int32_t *bounds, *weights;
    int ksize, n_out, precision;
    int narrow; /* every weight fits int16 (ATen's tables): pairs of taps per multiply */
    size_t lanes;
} mmf_sums_job;

typedef void (*mmf_sums_fn)(const mmf_sums_job *job);

/* Portable C (vectorised by the compiler where it can). */
void mmf_weighted_sums_c(const mmf_sums_job *job);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(MMF_NO_CLONES)
#define MMF_HAVE_AVX2_SUMS 1
/* AVX2 intrinsics: accumulators of 32 lanes stay in registers across the taps. Only to
 * be called where the CPU has AVX2. */
void mmf_weighted_sums_avx2(const mmf_sums_job *job);
#endif

/* Decides once, at module load, which body runs; then the body and its name ("avx2"
 * or "baseline"). */
void mmf_sums_init(void);
mmf_sums_fn mmf_sums_for_cpu(void);
const char *mmf_simd_level(void);

#endif
