/* The AVX2 body of the weighted sums (sums.h). Per output, 32 lanes at a time in four
 * register accumulators of int32:
 * - wide weights (Pillow's 22-bit ones): each tap widens 4 x 8 bytes to int32
 *   (vpmovzxbd), multiplies by the broadcast weight (vpmulld) and adds;
 * - narrow weights (int16, ATen's): two taps at once: their bytes interleaved and widened
 *   to int16 pairs, multiplied by the (w0, w1) pair and pair-summed into int32 by one
 *   vpmaddwd (exact: |255 * w0 + 255 * w1| < 2^24).
 * The shift, clamp and narrowing are two saturating packs (int32 -> int16 keeps order and
 * sign, int16 -> uint8 clamps to [0, 255]) and one permute that undoes their
 * per-128-bit-lane interleave. */
#include "sums.h"

#ifdef MMF_HAVE_AVX2_SUMS

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

static inline AVX2 __m256i widen8(const uint8_t *p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

static inline AVX2 __m256i packed_bytes(__m256i a, __m256i b, __m256i c, __m256i d, __m128i shift) {
    const __m256i ab = _mm256_packs_epi32(_mm256_sra_epi32(a, shift), _mm256_sra_epi32(b, shift));
    const __m256i cd = _mm256_packs_epi32(_mm256_sra_epi32(c, shift), _mm256_sra_epi32(d, shift));
    return _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* 16 lanes of taps p0 (weight w0) and p1 (w1): pair-summed products, lanes 0-7 and 8-15. */
static inline AVX2 void pair16(const uint8_t *p0, const uint8_t *p1, __m256i wpair, __m256i *lo, __m256i *hi) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)p0), x1 = _mm_loadu_si128((const __m128i *)p1);
    *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(x0, x1)), wpair));
    *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(x0, x1)), wpair));
}

static inline AVX2 __m256i weight_pair(const int32_t *w, int32_t j, int32_t count) {
    const uint32_t w0 = (uint16_t)w[j], w1 = j + 1 < count ? (uint16_t)w[j + 1] : 0;
    return _mm256_set1_epi32((int32_t)(w0 | w1 << 16));
}

AVX2 void mmf_weighted_sums_avx2(const mmf_sums_job *job) {
    const int32_t bias = (int32_t)1 << (job->precision - 1);
    const __m256i vbias = _mm256_set1_epi32(bias);
    const __m128i shift = _mm_cvtsi32_si128(job->precision);
    const ptrdiff_t step = job->tap_step;
    for (int o = 0; o < job->n_out; o++) {
        const int32_t start = job->bounds[2 * o], count = job->bounds[2 * o + 1];
        const int32_t *w = job->weights + (size_t)o * job->ksize;
        const uint8_t *first = job->in + start * step;
        uint8_t *out = job->out + o * job->out_step;
        size_t i = 0;
        for (; i + 32 <= job->lanes; i += 32) {
            __m256i a0 = vbias, a1 = vbias, a2 = vbias, a3 = vbias;
            if (job->narrow) {
                for (int32_t j = 0; j < count; j += 2) {
                    const uint8_t *p0 = first + j * step + i, *p1 = j + 1 < count ? p0 + step : p0;
                    const __m256i wp = weight_pair(w, j, count);
                    pair16(p0, p1, wp, &a0, &a1);
                    pair16(p0 + 16, p1 + 16, wp, &a2, &a3);
                }
            } else {
                for (int32_t j = 0; j < count; j++) {
                    const uint8_t *p = first + j * step + i;
                    const __m256i wj = _mm256_set1_epi32(w[j]);
                    a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(wj, widen8(p)));
                    a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(wj, widen8(p + 8)));
                    a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(wj, widen8(p + 16)));
                    a3 = _mm256_add_epi32(a3, _mm256_mullo_epi32(wj, widen8(p + 24)));
                }
            }
            _mm256_storeu_si256((__m256i *)(out + i), packed_bytes(a0, a1, a2, a3, shift));
        }
        if (i + 16 <= job->lanes) {
            __m256i a0 = vbias, a1 = vbias;
            for (int32_t j = 0; j < count; j++) {
                const uint8_t *p = first + j * step + i;
                const __m256i wj = _mm256_set1_epi32(w[j]);
                a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(wj, widen8(p)));
                a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(wj, widen8(p + 8)));
            }
            _mm_storeu_si128((__m128i *)(out + i), _mm256_castsi256_si128(packed_bytes(a0, a1, a0, a1, shift)));
            i += 16;
        }
        for (; i < job->lanes; i++) { /* the last < 16 lanes */
            int32_t acc = bias;
            for (int32_t j = 0; j < count; j++) {
                acc += w[j] * first[j * step + i];
            }
            const int32_t v = acc >> job->precision;
            out[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
}

#endif
