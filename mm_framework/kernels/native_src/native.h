/* Shared declarations of the mm_framework.kernels._native extension.
 *
 * The kernels below never validate: module.c checks every buffer, size, stride and
 * band bound before calling them, and calls them with the GIL released. Contracts
 * (formulas, layouts, the reference each one equals byte for byte) are in
 * docs/kernels.md.
 */
#ifndef MMF_NATIVE_H
#define MMF_NATIVE_H

#include <stddef.h>
#include <stdint.h>

/* One build runs on every x86-64 CPU and uses AVX2 where present: GCC/Clang emit a
 * baseline and an AVX2 body of each hot loop and pick one at load time (ifunc). The
 * kernels are integer or table-driven, so both bodies give the same bytes. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(MMF_NO_CLONES)
#define MMF_HOT __attribute__((target_clones("avx2", "default")))
#else
#define MMF_HOT
#endif

/* A resampling table for one axis (docs/kernels.md, "Separable fixed-point passes"):
 * output i reads `count[i]` inputs from `start[i]` with int32 weights w[i*ksize + j];
 * the result is clip8((2^(precision-1) + sum) >> precision). */
typedef struct {
    const int32_t *bounds; /* [n_out][2]: start, count */
    const int32_t *weights; /* [n_out][ksize] */
    int ksize;
    int precision;
    int narrow; /* every weight of the checked entries fits int16 */
} mmf_table;

/* A u8 image of `rows` rows, each `width * channels` contiguous bytes, `stride` apart. */
typedef struct {
    uint8_t *data;
    ptrdiff_t stride;
    int rows, width, channels;
} mmf_plane;

/* Pillow filters, in the order of the `filter` argument of pil_coeffs. */
enum { MMF_BILINEAR = 0, MMF_BICUBIC = 1, MMF_LANCZOS = 2, MMF_N_FILTERS = 3 };

/* Pillow's fixed-point fraction bits for 8-bit images (docs/kernels.md). */
#define MMF_PIL_PRECISION 22

/* Fills bounds[n_out][2] and weights[n_out][ksize] with Pillow's table for `filter`;
 * ksize comes from mmf_pil_ksize, `scratch` holds ksize doubles. */
int mmf_pil_ksize(int in_size, int out_size, int filter);
void mmf_pil_coeffs(int in_size, int out_size, int filter, int ksize, int32_t *bounds, int32_t *weights,
                    double *scratch);

/* Picks the resample bodies for this CPU; called once when the module loads. */
void mmf_resample_init(void);

/* Destination rows [lo, hi) of a horizontal pass: dst row r from src row r.
 * `scratch` holds mmf_horizontal_scratch(src width, dst width, channels) bytes. */
size_t mmf_horizontal_scratch(int in_width, int out_width, int channels);
void mmf_resample_horizontal(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi,
                             uint8_t *scratch);

/* Destination rows [lo, hi) of a vertical pass (rows of equal width and channels). */
void mmf_resample_vertical(const mmf_plane *src, const mmf_plane *dst, const mmf_table *t, int lo, int hi);

/* Qwen-VL merged-block patchify of merge-window rows [lo, hi) (docs/kernels.md).
 * `frames` holds n_frames HWC frames (n_frames is 1 or tps) `frame_stride` bytes apart.
 * With `lut` the output is its values (f32, or uint16 bf16 bits: `lut_bytes` 4 or 2);
 * without it, the uint8 pixels themselves.
 * `planes`: n_frames * 3 * ps * merge * width + 15 bytes of scratch, the caller's own (one
 * per concurrent call). */
typedef struct {
    const uint8_t *frames;
    ptrdiff_t frame_stride, row_stride;
    int n_frames, height, width;
    int ps, merge, tps;
    const void *lut;  /* [3][256] f32 or uint16, or NULL for uint8 patches */
    int lut_bytes;    /* 4 or 2 (with lut) */
    void *out;        /* [(h/ps)*(w/ps)][3*tps*ps*ps] of the lut's type, or uint8 without lut */
    uint8_t *planes;  /* [n_frames][3][ps * merge][width] scratch */
} mmf_qwen_job;
void mmf_patchify_qwen(const mmf_qwen_job *job, int lo, int hi);

/* Inkling's bf16 patchify of patch rows [lo, hi) (docs/kernels.md). */
typedef struct {
    const uint8_t *rgb;
    ptrdiff_t row_stride;
    int height, width, ps;
    const uint16_t *lut; /* [3][256] */
    const uint16_t *pad; /* [3] */
    uint16_t *out;       /* [ceil(h/ps) * (w/ps + 1)][ps][ps][3] */
} mmf_bf16_job;
void mmf_patchify_bf16(const mmf_bf16_job *job, int lo, int hi);

/* An HWC u8 image through a [3][256] u16 table into CHW planes, rows [lo, hi). */
typedef struct {
    const uint8_t *rgb;
    ptrdiff_t row_stride;
    int height, width;
    const uint16_t *lut; /* [3][256] */
    uint16_t *out;       /* [3][h][w] */
} mmf_lut_chw_job;
void mmf_lut_chw_u16(const mmf_lut_chw_job *job, int lo, int hi);

/* Rows [lo, hi) of an HWC u8 image through a rescale + normalize program into [3][h][w]
 * planes (norm.c): float32, or bfloat16 bits with `bf16`. */
enum { MMF_OP_ADD = 0, MMF_OP_SUB = 1, MMF_OP_MUL = 2, MMF_OP_DIV = 3, MMF_MAX_STEPS = 8 };
typedef struct {
    const uint8_t *rgb;
    ptrdiff_t row_stride;
    int height, width;
    const int32_t *ops;   /* [n_steps], MMF_OP_* */
    const float *consts;  /* [n_steps][3] */
    int n_steps;
    int bf16;
    void *out;            /* [3][h][w] float32, or uint16 with bf16 */
} mmf_norm_job;
void mmf_norm_chw(const mmf_norm_job *job, int lo, int hi);

/* Rows [lo, hi) of an HWC u8 image into its u8 [3][h][w] planes `out`. */
void mmf_planes_u8(const mmf_plane *img, uint8_t *out, int lo, int hi);

/* n pixels of 4 bytes (R, G, B, pad) packed into 3 (docs/kernels.md, "RGB export"). */
void mmf_pack_rgb(const uint8_t *in, uint8_t *out, size_t n);

#endif
