/* Validation of every buffer an entry point receives (checks.h). Shapes, strides and
 * formats come from the buffer protocol; integers from Python are range-checked; no
 * assumption is made that the Python face already checked anything. */
#include "checks.h"

#include <stdint.h>
#include <string.h>

PyObject *mmf_KernelError;

static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg) {
        PyErr_SetObject(mmf_KernelError, msg);
        Py_DECREF(msg);
    }
    return -1;
}

static const char *item_name(char code) {
    switch (code) {
    case 'B': return "uint8";
    case 'H': return "uint16";
    case 'i': return "int32";
    default: return "float32";
    }
}

static Py_ssize_t item_size(char code) {
    return code == 'B' ? 1 : code == 'H' ? 2 : 4;
}

int mmf_format_is(const char *fmt, char code) {
    if (fmt == NULL) {
        return code == 'B';
    }
    if (fmt[0] == '@' || fmt[0] == '=' || (fmt[0] == '<' && PY_LITTLE_ENDIAN)) {
        fmt++;
    }
    return fmt[0] == code && fmt[1] == '\0';
}

int mmf_take(PyObject *obj, mmf_buf *b, const char *name, char code, int writable) {
    b->held = 0;
    if (!PyObject_CheckBuffer(obj)) {
        return fail("%s: expected a %s array, got %.100s", name, item_name(code), Py_TYPE(obj)->tp_name);
    }
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return fail("%s: the object does not export strided %s data", name, item_name(code));
    }
    b->held = 1;
    if (!mmf_format_is(b->view.format, code) || b->view.itemsize != item_size(code)) {
        return fail("%s: expected %s items, got format %s", name, item_name(code),
                    b->view.format ? b->view.format : "B");
    }
    if (writable && b->view.readonly) {
        return fail("%s: the output is read-only", name);
    }
    if (b->view.ndim < 1 || b->view.shape == NULL || b->view.strides == NULL) {
        return fail("%s: expected an array with a shape, got a scalar", name);
    }
    return 0;
}

void mmf_release(mmf_buf *b, int n) {
    for (int i = 0; i < n; i++) {
        if (b[i].held) {
            PyBuffer_Release(&b[i].view);
            b[i].held = 0;
        }
    }
}

static int check_dims(const Py_buffer *v, const char *name) {
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] < 1 || v->shape[d] > MMF_MAX_DIM) {
            return fail("%s: dimension %d is %zd, outside [1, %d]", name, d, v->shape[d], MMF_MAX_DIM);
        }
    }
    return 0;
}

int mmf_check_dense(const mmf_buf *b, const char *name, int ndim, const Py_ssize_t *shape) {
    const Py_buffer *v = &b->view;
    if (v->ndim != ndim) {
        return fail("%s: expected %d dimensions, got %d", name, ndim, v->ndim);
    }
    if (check_dims(v, name) < 0) {
        return -1;
    }
    for (int d = 0; d < ndim; d++) {
        if (shape[d] >= 0 && v->shape[d] != shape[d]) {
            return fail("%s: dimension %d is %zd, expected %zd", name, d, v->shape[d], shape[d]);
        }
    }
    if (!PyBuffer_IsContiguous(v, 'C')) {
        return fail("%s: expected a C-contiguous array", name);
    }
    return 0;
}

int mmf_check_plane(const mmf_buf *b, const char *name, const char *allowed, mmf_plane *p) {
    const Py_buffer *v = &b->view;
    if (v->ndim != 2 && v->ndim != 3) {
        return fail("%s: expected an image of 2 or 3 dimensions, got %d", name, v->ndim);
    }
    if (check_dims(v, name) < 0) {
        return -1;
    }
    const Py_ssize_t channels = v->ndim == 3 ? v->shape[2] : 1;
    if (!((channels == 1 && strchr(allowed, '1')) || (channels == 3 && strchr(allowed, '3')))) {
        return fail("%s: %zd channels are not supported here (allowed: %s)", name, channels, allowed);
    }
    const Py_ssize_t row_bytes = v->shape[1] * channels;
    if (row_bytes > INT32_MAX || (v->ndim == 3 && v->strides[2] != 1) || v->strides[1] != channels) {
        return fail("%s: the pixels of a row must be contiguous bytes", name);
    }
    if (v->shape[0] > 1 && v->strides[0] < row_bytes) {
        return fail("%s: rows must lie a positive stride of at least %zd bytes apart, got %zd", name, row_bytes,
                    v->strides[0]);
    }
    p->data = (uint8_t *)v->buf;
    p->stride = v->strides[0];
    p->rows = (int)v->shape[0];
    p->width = (int)v->shape[1];
    p->channels = (int)channels;
    return 0;
}

int mmf_check_rgb(const mmf_buf *b, const char *name, mmf_plane *p) {
    if (b->view.ndim != 3) {
        return fail("%s: expected [h, w, 3], got %d dimensions", name, b->view.ndim);
    }
    return mmf_check_plane(b, name, "3", p);
}

int mmf_check_table(const mmf_buf *bounds, const mmf_buf *weights, Py_ssize_t n_out, Py_ssize_t n_in, int precision,
                    Py_ssize_t lo, Py_ssize_t hi, mmf_table *t) {
    const Py_ssize_t bshape[2] = {n_out, 2}, wshape[2] = {n_out, -1};
    if (mmf_check_dense(bounds, "bounds", 2, bshape) < 0 || mmf_check_dense(weights, "weights", 2, wshape) < 0) {
        return -1;
    }
    if (lo < 0 || hi > n_out) {
        return fail("band: entries [%zd, %zd) of a table of %zd", lo, hi, n_out);
    }
    if (precision < 1 || precision > 30) {
        return fail("precision: %d is outside [1, 30]", precision);
    }
    t->bounds = (const int32_t *)bounds->view.buf;
    t->weights = (const int32_t *)weights->view.buf;
    t->ksize = (int)weights->view.shape[1];
    t->precision = precision;
    t->narrow = 1;
    const int64_t bias = (int64_t)1 << (precision - 1);
    for (Py_ssize_t i = lo; i < hi; i++) {
        const int64_t start = t->bounds[2 * i], count = t->bounds[2 * i + 1];
        if (start < 0 || count < 0 || count > t->ksize || start + count > n_in) {
            return fail("bounds: output %zd reads %lld inputs from %lld; only [0, %zd) exist with %d taps", i,
                        (long long)count, (long long)start, n_in, t->ksize);
        }
        int64_t mass = 0;
        for (int64_t j = 0; j < count; j++) {
            int64_t w = t->weights[i * t->ksize + j];
            mass += w < 0 ? -w : w;
            t->narrow &= w >= INT16_MIN && w <= INT16_MAX;
        }
        if (bias + 255 * mass > INT32_MAX || bias - 255 * mass < INT32_MIN) {
            return fail("weights: output %zd could overflow the int32 accumulator", i);
        }
    }
    return 0;
}

int mmf_check_band(Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t n, const char *unit) {
    if (lo < 0 || hi < lo || hi > n) {
        return fail("band: [%zd, %zd) is not inside the %zd %s", lo, hi, n, unit);
    }
    return 0;
}

/* [first, last) byte addresses a buffer's elements cover (any sign of strides). */
static void extent(const Py_buffer *v, uintptr_t *first, uintptr_t *last) {
    intptr_t lo = 0, hi = 0;
    for (int d = 0; d < v->ndim; d++) {
        intptr_t span = (intptr_t)(v->shape[d] - 1) * v->strides[d];
        if (span < 0) {
            lo += span;
        } else {
            hi += span;
        }
    }
    *first = (uintptr_t)v->buf + lo;
    *last = (uintptr_t)v->buf + hi + v->itemsize;
}

int mmf_check_disjoint(const mmf_buf *out, const char *out_name, const mmf_buf *in, const char *in_name) {
    uintptr_t a0, a1, b0, b1;
    extent(&out->view, &a0, &a1);
    extent(&in->view, &b0, &b1);
    if (a0 < b1 && b0 < a1) {
        return fail("%s: shares memory with %s", out_name, in_name);
    }
    return 0;
}
