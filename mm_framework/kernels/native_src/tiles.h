/* 16 x 16 byte tile transposes (two at a time, on 32-byte vectors) for the horizontal
 * pass (resample.c) and RGB deinterleaving on 16-byte vectors (patchify.c, norm.c). GNU C vector
 * extensions: each shuffle compiles to the unpack/shuffle instructions of the target in
 * use (SSE2 in the baseline build, VEX forms in the AVX2 clone), so one source serves
 * every clone. Always inlined, so each clone gets its own code. */
#ifndef MMF_TILES_H
#define MMF_TILES_H

#include <stdint.h>
#include <string.h>

typedef uint8_t mmf_u8x16 __attribute__((vector_size(16)));

#define MMF_INLINE static inline __attribute__((always_inline))

MMF_INLINE mmf_u8x16 load16(const uint8_t *p) {
    mmf_u8x16 v;
    memcpy(&v, p, 16);
    return v;
}

MMF_INLINE void store16(uint8_t *p, mmf_u8x16 v) {
    memcpy(p, &v, 16);
}

/* Two 16 x 16 tiles side by side, one per 128-bit half: the unpacks of AVX2 interleave
 * within each half, so one pass of transpose16x2 transposes both tiles. */
typedef uint8_t mmf_u8x32 __attribute__((vector_size(32)));
/* The helpers below are always inlined, so their 32-byte returns never meet the ABI that
 * GCC warns about for a baseline (non-AVX) clone. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

MMF_INLINE mmf_u8x32 join16(mmf_u8x16 lo, mmf_u8x16 hi) {
    return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                   21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
}

MMF_INLINE mmf_u8x16 low16(mmf_u8x32 v) {
    return __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

MMF_INLINE mmf_u8x16 high16(mmf_u8x32 v) {
    return __builtin_shufflevector(v, v, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
}

MMF_INLINE mmf_u8x32 load32(const uint8_t *p) {
    mmf_u8x32 v;
    memcpy(&v, p, 32);
    return v;
}

MMF_INLINE void store32(uint8_t *p, mmf_u8x32 v) {
    memcpy(p, &v, 32);
}

/* In place, in each half: t[j] byte i becomes t[i] byte j. Four rounds of interleaving
 * rows i and i + 8 rotate the 8-bit (row, column) index by one bit each, i.e. swap row
 * and column. */
MMF_INLINE void transpose16x2(mmf_u8x32 t[16]) {
    for (int round = 0; round < 4; round++) {
        mmf_u8x32 n[16];
        for (int i = 0; i < 8; i++) {
            n[2 * i] = __builtin_shufflevector(t[i], t[i + 8], 0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                               16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55);
            n[2 * i + 1] = __builtin_shufflevector(t[i], t[i + 8], 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46,
                                                   15, 47, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63);
        }
        memcpy(t, n, sizeof(n));
    }
}

/* 16 RGB pixels (48 bytes) -> their R, G and B bytes. */
MMF_INLINE void deinterleave3(const uint8_t *p, mmf_u8x16 *r, mmf_u8x16 *g, mmf_u8x16 *b) {
    mmf_u8x16 a = load16(p), m = load16(p + 16), z = load16(p + 32);
    /* Bytes 0..31 hold channel c at c, c+3, ..., the first 11 (c = 0) or 10 of them;
     * the rest of the 16 come from bytes 32..47. */
    mmf_u8x16 r0 = __builtin_shufflevector(a, m, 0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 0, 0, 0, 0, 0);
    mmf_u8x16 g0 = __builtin_shufflevector(a, m, 1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 0, 0, 0, 0, 0);
    mmf_u8x16 b0 = __builtin_shufflevector(a, m, 2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0, 0, 0, 0, 0, 0);
    *r = __builtin_shufflevector(r0, z, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 20, 23, 26, 29);
    *g = __builtin_shufflevector(g0, z, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 18, 21, 24, 27, 30);
    *b = __builtin_shufflevector(b0, z, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 19, 22, 25, 28, 31);
}

/* `width` RGB pixels split into r, g and b. */
MMF_INLINE void split_row(const uint8_t *in, int width, uint8_t *r, uint8_t *g, uint8_t *b) {
    int x = 0;
    for (; x + 16 <= width; x += 16) {
        mmf_u8x16 vr, vg, vb;
        deinterleave3(in + 3 * (size_t)x, &vr, &vg, &vb);
        store16(r + x, vr);
        store16(g + x, vg);
        store16(b + x, vb);
    }
    for (; x < width; x++) {
        r[x] = in[3 * x];
        g[x] = in[3 * x + 1];
        b[x] = in[3 * x + 2];
    }
}

#endif
