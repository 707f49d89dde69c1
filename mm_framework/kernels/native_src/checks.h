/* Buffer checks of the entry points (checks.c). Each returns 0 on success, or -1 with
 * KernelError set whose message names the argument and the cause. Nothing is written
 * to any buffer before every check of a call has passed. */
#ifndef MMF_CHECKS_H
#define MMF_CHECKS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "native.h"

/* Largest image side, patch size or band index any entry point accepts: sizes stay
 * exact in Pillow's float box and every product of two of them fits in 64 bits. */
#define MMF_MAX_DIM (1 << 24)

extern PyObject *mmf_KernelError;

typedef struct {
    Py_buffer view;
    int held;
} mmf_buf;

/* Whether a buffer format is item `code` in native order: "X", "@X", "=X", and "<X" on
 * little-endian hosts (NULL is "B"). */
int mmf_format_is(const char *fmt, char code);

/* A buffer of item `code` ('B', 'H', 'i', 'f'); writable if asked. */
int mmf_take(PyObject *obj, mmf_buf *b, const char *name, char code, int writable);
void mmf_release(mmf_buf *b, int n);

/* A C-contiguous buffer of exactly `ndim` dims with the given shape (-1: any >= 1). */
int mmf_check_dense(const mmf_buf *b, const char *name, int ndim, const Py_ssize_t *shape);

/* An image: [rows, width] (1 channel) or [rows, width, channels], channels in `allowed`
 * ("1", "3" or "13"); pixels of a row contiguous, rows a positive stride apart. */
int mmf_check_plane(const mmf_buf *b, const char *name, const char *allowed, mmf_plane *p);

/* An HWC RGB image: [rows, width, 3], laid out as mmf_check_plane requires. */
int mmf_check_rgb(const mmf_buf *b, const char *name, mmf_plane *p);

/* A resampling table (bounds [n_out, 2] and weights [n_out, ksize], int32) whose
 * entries [lo, hi) read only inputs [0, n_in) and whose sums cannot overflow int32. */
int mmf_check_table(const mmf_buf *bounds, const mmf_buf *weights, Py_ssize_t n_out, Py_ssize_t n_in, int precision,
                    Py_ssize_t lo, Py_ssize_t hi, mmf_table *t);

/* 0 <= lo <= hi <= n. */
int mmf_check_band(Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t n, const char *unit);

/* The output's bytes overlap none of the inputs' bytes. */
int mmf_check_disjoint(const mmf_buf *out, const char *out_name, const mmf_buf *in, const char *in_name);

/* The first byte of `n` 4-byte pixels that an Arrow C array exports (arrow.c): Pillow's
 * fixed_size_list<uint8>[4] of an RGB image, checked field by field; NULL if not. */
const uint8_t *mmf_check_rgbx(PyObject *schema_capsule, PyObject *array_capsule, int64_t n);

#endif
