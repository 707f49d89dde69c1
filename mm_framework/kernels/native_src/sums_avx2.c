/* The AVX2 body of the weighted sums (sums.h). Per output, 32 lanes at a time in four
 * register accumulators of int32:
 * - wide weights (Pillow's 22-bit ones): each tap widens 4 x 8 bytes to int32
 *   (vpmovzxbd), multiplies by the broadcast weight (vpmulld) and adds;
 * - narrow weights (int16, ATen's): two taps at once: their 32 bytes interleaved per
 *   128-bit half, widened to int16 pairs against zero, multiplied by the (w0, w1) pair
 *   and pair-summed into int32 by one vpmaddwd each (exact: |255 * w0 + 255 * w1| < 2^24).
 *   The pairs of an output are packed once into a small table and broadcast from it:
 *   rebuilding them for every 32 lanes cost the vertical pass 40% of its time.
 * The shift, clamp and narrowing are two saturating packs (int32 -> int16 keeps order and
 * sign, int16 -> uint8 clamps to [0, 255]); the wide path's one permute undoes their
 * per-128-bit-lane interleave, the narrow path's lanes are already in that order. */
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

/* Taps p0 (weight w0) and p1 (w1) of 32 lanes, added to acc: lanes (0-3 | 16-19),
 * (4-7 | 20-23), (8-11 | 24-27) and (12-15 | 28-31) per 128-bit half. */
static inline AVX2 void pair32(const uint8_t *p0, const uint8_t *p1, __m256i wpair, __m256i acc[4]) {
    const __m256i zero = _mm256_setzero_si256();
    const __m256i y0 = _mm256_loadu_si256((const __m256i *)p0), y1 = _mm256_loadu_si256((const __m256i *)p1);
    const __m256i lo = _mm256_unpacklo_epi8(y0, y1), hi = _mm256_unpackhi_epi8(y0, y1);
    acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(_mm256_unpacklo_epi8(lo, zero), wpair));
    acc[1] = _mm256_add_epi32(acc[1], _mm256_madd_epi16(_mm256_unpackhi_epi8(lo, zero), wpair));
    acc[2] = _mm256_add_epi32(acc[2], _mm256_madd_epi16(_mm256_unpacklo_epi8(hi, zero), wpair));
    acc[3] = _mm256_add_epi32(acc[3], _mm256_madd_epi16(_mm256_unpackhi_epi8(hi, zero), wpair));
}

/* pair32's accumulators as 32 bytes in lane order: the packs interleave per 128-bit half
 * exactly as pair32 split the lanes. */
static inline AVX2 __m256i packed_pairs(const __m256i acc[4], __m128i shift) {
    const __m256i ab = _mm256_packs_epi32(_mm256_sra_epi32(acc[0], shift), _mm256_sra_epi32(acc[1], shift));
    const __m256i cd = _mm256_packs_epi32(_mm256_sra_epi32(acc[2], shift), _mm256_sra_epi32(acc[3], shift));
    return _mm256_packus_epi16(ab, cd);
}

/* Taps j and j + 1 of w as the int16 pair (w[j], w[j + 1]), the second 0 past count. */
static inline uint32_t weight_pair(const int32_t *w, int32_t j, int32_t count) {
    return (uint16_t)w[j] | (uint32_t)(j + 1 < count ? (uint16_t)w[j + 1] : 0) << 16;
}

/* Tap pairs packed per output before its lanes; an output with more (a downscale by over
 * 16 with bicubic) packs each pair as it goes. */
enum { PACKED_PAIRS = 32 };

/* The narrow sums of one output over lanes [0, n32), n32 a multiple of 32. */
static inline AVX2 void narrow_sums(const uint8_t *first, ptrdiff_t step, const int32_t *w, int32_t count,
                                    size_t n32, int32_t bias, __m128i shift, uint8_t *out) {
    const int32_t n_pairs = (count + 1) / 2;
    const int packed = n_pairs <= PACKED_PAIRS;
    uint32_t pairs[PACKED_PAIRS];
    for (int32_t k = 0; packed && k < n_pairs; k++) {
        pairs[k] = weight_pair(w, 2 * k, count);
    }
    for (size_t i = 0; i < n32; i += 32) {
        __m256i acc[4] = {_mm256_set1_epi32(bias), _mm256_set1_epi32(bias), _mm256_set1_epi32(bias),
                          _mm256_set1_epi32(bias)};
        const uint8_t *p = first + i;
        for (int32_t k = 0; k < n_pairs; k++, p += 2 * step) {
            const uint32_t wp = packed ? pairs[k] : weight_pair(w, 2 * k, count);
            /* An odd count's last tap pairs with itself at weight 0. */
            pair32(p, 2 * k + 1 < count ? p + step : p, _mm256_set1_epi32((int32_t)wp), acc);
        }
        _mm256_storeu_si256((__m256i *)(out + i), packed_pairs(acc, shift));
    }
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
        if (job->narrow) {
            i = job->lanes / 32 * 32;
            narrow_sums(first, step, w, count, i, bias, shift, out);
        }
        for (; i + 32 <= job->lanes; i += 32) {
            __m256i a0 = vbias, a1 = vbias, a2 = vbias, a3 = vbias;
            for (int32_t j = 0; j < count; j++) {
                const uint8_t *p = first + j * step + i;
                const __m256i wj = _mm256_set1_epi32(w[j]);
                a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(wj, widen8(p)));
                a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(wj, widen8(p + 8)));
                a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(wj, widen8(p + 16)));
                a3 = _mm256_add_epi32(a3, _mm256_mullo_epi32(wj, widen8(p + 24)));
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
