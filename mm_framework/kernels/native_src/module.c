/* mm_framework.kernels._native: the entry points of the native kernels.
 *
 * Each entry point checks all of its arguments (checks.c), then runs its kernel on the
 * band of rows it was given with the GIL released. Bands are driven from Python through
 * the fan-out seam; there are no threads here. The Python face is
 * mm_framework/kernels/native.py; the contracts are in docs/kernels.md.
 */
#include "checks.h"
#include "sums.h"

#include <stdlib.h>

static PyObject *simd_level(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(mmf_simd_level());
}

static PyObject *pil_coeffs(PyObject *self, PyObject *args) {
    (void)self;
    Py_ssize_t in_size, out_size;
    int filter;
    if (!PyArg_ParseTuple(args, "nni:pil_coeffs", &in_size, &out_size, &filter)) {
        return NULL;
    }
    if (in_size < 1 || in_size > MMF_MAX_DIM || out_size < 1 || out_size > MMF_MAX_DIM) {
        PyErr_Format(mmf_KernelError, "pil_coeffs: sizes %zd -> %zd are outside [1, %d]", in_size, out_size,
                     MMF_MAX_DIM);
        return NULL;
    }
    if (filter < 0 || filter >= MMF_N_FILTERS) {
        PyErr_Format(mmf_KernelError, "pil_coeffs: unknown filter %d", filter);
        return NULL;
    }
    const int ksize = mmf_pil_ksize((int)in_size, (int)out_size, filter);
    if ((int64_t)ksize * out_size > ((int64_t)1 << 26)) {
        PyErr_Format(mmf_KernelError, "pil_coeffs: %zd -> %zd needs a table of %d taps per output, too large",
                     in_size, out_size, ksize);
        return NULL;
    }
    PyObject *bounds = PyBytes_FromStringAndSize(NULL, out_size * 2 * (Py_ssize_t)sizeof(int32_t));
    PyObject *weights = PyBytes_FromStringAndSize(NULL, out_size * ksize * (Py_ssize_t)sizeof(int32_t));
    double *scratch = PyMem_Malloc(sizeof(double) * (size_t)ksize);
    if (!bounds || !weights || !scratch) {
        Py_XDECREF(bounds);
        Py_XDECREF(weights);
        PyMem_Free(scratch);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    mmf_pil_coeffs((int)in_size, (int)out_size, filter, ksize, (int32_t *)PyBytes_AS_STRING(bounds),
                   (int32_t *)PyBytes_AS_STRING(weights), scratch);
    Py_END_ALLOW_THREADS
    PyMem_Free(scratch);
    return Py_BuildValue("(iNN)", ksize, bounds, weights);
}

/* resample_horizontal / resample_vertical(src, dst, bounds, weights, precision, lo, hi) */
static PyObject *resample(PyObject *args, int horizontal) {
    PyObject *o[4];
    int precision;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOOOinn", &o[0], &o[1], &o[2], &o[3], &precision, &lo, &hi)) {
        return NULL;
    }
    mmf_buf b[4] = {{.held = 0}};
    mmf_plane src, dst;
    mmf_table t;
    uint8_t *scratch = NULL;
    int ok = mmf_take(o[0], &b[0], "src", 'B', 0) == 0 && mmf_take(o[1], &b[1], "dst", 'B', 1) == 0 &&
             mmf_take(o[2], &b[2], "bounds", 'i', 0) == 0 && mmf_take(o[3], &b[3], "weights", 'i', 0) == 0 &&
             mmf_check_plane(&b[0], "src", "13", &src) == 0 && mmf_check_plane(&b[1], "dst", "13", &dst) == 0;
    if (ok && (src.channels != dst.channels || (horizontal ? src.rows != dst.rows : src.width != dst.width))) {
        PyErr_Format(mmf_KernelError, "dst: %dx%dx%d does not fit a %s pass of src %dx%dx%d", dst.rows, dst.width,
                     dst.channels, horizontal ? "horizontal" : "vertical", src.rows, src.width, src.channels);
        ok = 0;
    }
    ok = ok && mmf_check_band(lo, hi, dst.rows, "rows of dst") == 0 &&
         /* A horizontal band uses the whole table (one entry per output column), a
            vertical band only the entries of its rows. */
         mmf_check_table(&b[2], &b[3], horizontal ? dst.width : dst.rows, horizontal ? src.width : src.rows,
                         precision, horizontal ? 0 : lo, horizontal ? dst.width : hi, &t) == 0 &&
         mmf_check_disjoint(&b[1], "dst", &b[0], "src") == 0 && mmf_check_disjoint(&b[1], "dst", &b[2], "bounds") == 0 &&
         mmf_check_disjoint(&b[1], "dst", &b[3], "weights") == 0;
    if (ok && horizontal && lo < hi) {
        scratch = malloc(mmf_horizontal_scratch(src.width, dst.width, src.channels));
        if (!scratch) {
            PyErr_NoMemory();
            ok = 0;
        }
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (horizontal) {
            mmf_resample_horizontal(&src, &dst, &t, (int)lo, (int)hi, scratch);
        } else {
            mmf_resample_vertical(&src, &dst, &t, (int)lo, (int)hi);
        }
        Py_END_ALLOW_THREADS
    }
    free(scratch);
    mmf_release(b, 4);
    return ok ? Py_NewRef(Py_None) : NULL;
}

static PyObject *resample_horizontal(PyObject *self, PyObject *args) {
    (void)self;
    return resample(args, 1);
}

static PyObject *resample_vertical(PyObject *self, PyObject *args) {
    (void)self;
    return resample(args, 0);
}

static int check_patch_args(Py_ssize_t ps, Py_ssize_t merge, Py_ssize_t tps) {
    if (ps < 1 || ps > 4096 || merge < 1 || merge > 64 || tps < 1 || tps > 64) {
        PyErr_Format(mmf_KernelError, "patch size %zd, merge %zd or temporal patch %zd is out of range", ps, merge,
                     tps);
        return -1;
    }
    return 0;
}

/* The frames of patchify_qwen: [h, w, 3] (one frame) or [t, h, w, 3]. */
static int check_frames(const mmf_buf *b, Py_ssize_t tps, mmf_plane *frame, Py_ssize_t *n_frames,
                        Py_ssize_t *frame_stride) {
    Py_buffer v = b->view;
    *n_frames = 1;
    *frame_stride = 0;
    if (v.ndim == 4) {
        *n_frames = v.shape[0];
        *frame_stride = v.strides[0];
        v.ndim = 3;
        v.shape++;
        v.strides++;
    } else if (v.ndim != 3) {
        PyErr_Format(mmf_KernelError, "frames: expected [h, w, 3] or [t, h, w, 3], got %d dimensions", v.ndim);
        return -1;
    }
    const mmf_buf first = {v, 1};
    if (mmf_check_plane(&first, "frames", "3", frame) < 0) {
        return -1;
    }
    if (*n_frames != 1 && *n_frames != tps) {
        PyErr_Format(mmf_KernelError, "frames: %zd frames for a temporal patch of %zd", *n_frames, tps);
        return -1;
    }
    if (*n_frames > 1 && *frame_stride <= 0) {
        PyErr_Format(mmf_KernelError, "frames: frames must lie a positive stride apart, got %zd", *frame_stride);
        return -1;
    }
    return 0;
}

/* The item code of a patchify_qwen table: 'H' (uint16 bf16 bits) when the object exports
 * uint16 items, else 'f' (mmf_take then checks it fully either way). */
static char lut_code(PyObject *lut) {
    Py_buffer view;
    if (PyObject_GetBuffer(lut, &view, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        return 'f';
    }
    const char code = mmf_format_is(view.format, 'H') ? 'H' : 'f';
    PyBuffer_Release(&view);
    return code;
}

/* patchify_qwen(frames, lut, out, ps, merge, tps, lo, hi): out has the lut's item type (float32 or uint16);
 * lut None writes uint8 patches into a uint8 out. */
static PyObject *patchify_qwen(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3];
    Py_ssize_t ps, merge, tps, lo, hi;
    if (!PyArg_ParseTuple(args, "OOOnnnnn", &o[0], &o[1], &o[2], &ps, &merge, &tps, &lo, &hi)) {
        return NULL;
    }
    mmf_buf b[3] = {{.held = 0}};
    const int u8 = o[1] == Py_None;
    const char code = u8 ? 'B' : lut_code(o[1]);
    mmf_plane frame;
    Py_ssize_t n_frames, frame_stride;
    int ok = check_patch_args(ps, merge, tps) == 0 && mmf_take(o[0], &b[0], "frames", 'B', 0) == 0 &&
             (u8 || mmf_take(o[1], &b[1], "lut", code, 0) == 0) && mmf_take(o[2], &b[2], "out", code, 1) == 0 &&
             check_frames(&b[0], tps, &frame, &n_frames, &frame_stride) == 0;
    if (ok && (frame.rows % (ps * merge) || frame.width % (ps * merge))) {
        PyErr_Format(mmf_KernelError, "frames: %dx%d is not a multiple of patch %zd x merge %zd", frame.rows,
                     frame.width, ps, merge);
        ok = 0;
    }
    if (ok) {
        const Py_ssize_t lut_shape[2] = {3, 256};
        const Py_ssize_t out_shape[2] = {(frame.rows / ps) * (frame.width / ps), 3 * tps * ps * ps};
        ok = (u8 || mmf_check_dense(&b[1], "lut", 2, lut_shape) == 0) && mmf_check_dense(&b[2], "out", 2, out_shape) == 0 &&
             mmf_check_band(lo, hi, frame.rows / (ps * merge), "merge-window rows") == 0 &&
             mmf_check_disjoint(&b[2], "out", &b[0], "frames") == 0 &&
             (u8 || mmf_check_disjoint(&b[2], "out", &b[1], "lut") == 0);
    }
    if (ok) {
        uint8_t *planes = PyMem_RawMalloc((size_t)n_frames * 3 * ps * merge * frame.width + 15);
        if (!planes) {
            PyErr_NoMemory();
            ok = 0;
        } else {
            mmf_qwen_job job = {frame.data, frame_stride, frame.stride, (int)n_frames, frame.rows, frame.width,
                                (int)ps, (int)merge, (int)tps, u8 ? NULL : b[1].view.buf, code == 'H' ? 2 : 4,
                                b[2].view.buf, planes};
            Py_BEGIN_ALLOW_THREADS
            mmf_patchify_qwen(&job, (int)lo, (int)hi);
            Py_END_ALLOW_THREADS
            PyMem_RawFree(planes);
        }
    }
    mmf_release(b, 3);
    return ok ? Py_NewRef(Py_None) : NULL;
}

/* patchify_bf16(rgb, lut, pad, out, ps, lo, hi) */
static PyObject *patchify_bf16(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    Py_ssize_t ps, lo, hi;
    if (!PyArg_ParseTuple(args, "OOOOnnn", &o[0], &o[1], &o[2], &o[3], &ps, &lo, &hi)) {
        return NULL;
    }
    mmf_buf b[4] = {{.held = 0}};
    mmf_plane img;
    int ok = check_patch_args(ps, 1, 1) == 0 && mmf_take(o[0], &b[0], "rgb", 'B', 0) == 0 &&
             mmf_take(o[1], &b[1], "lut", 'H', 0) == 0 && mmf_take(o[2], &b[2], "pad", 'H', 0) == 0 &&
             mmf_take(o[3], &b[3], "out", 'H', 1) == 0;
    ok = ok && mmf_check_rgb(&b[0], "rgb", &img) == 0;
    if (ok) {
        const Py_ssize_t nph = (img.rows + ps - 1) / ps, npw = img.width / ps + 1;
        const Py_ssize_t lut_shape[2] = {3, 256}, pad_shape[1] = {3}, out_shape[4] = {nph * npw, ps, ps, 3};
        ok = mmf_check_dense(&b[1], "lut", 2, lut_shape) == 0 && mmf_check_dense(&b[2], "pad", 1, pad_shape) == 0 &&
             mmf_check_dense(&b[3], "out", 4, out_shape) == 0 && mmf_check_band(lo, hi, nph, "patch rows") == 0 &&
             mmf_check_disjoint(&b[3], "out", &b[0], "rgb") == 0 &&
             mmf_check_disjoint(&b[3], "out", &b[1], "lut") == 0 &&
             mmf_check_disjoint(&b[3], "out", &b[2], "pad") == 0;
    }
    if (ok) {
        mmf_bf16_job job = {img.data, img.stride, img.rows, img.width, (int)ps, (const uint16_t *)b[1].view.buf,
                            (const uint16_t *)b[2].view.buf, (uint16_t *)b[3].view.buf};
        Py_BEGIN_ALLOW_THREADS
        mmf_patchify_bf16(&job, (int)lo, (int)hi);
        Py_END_ALLOW_THREADS
    }
    mmf_release(b, 4);
    return ok ? Py_NewRef(Py_None) : NULL;
}

/* norm_chw(rgb, ops, consts, out, bf16, lo, hi) */
static PyObject *norm_chw(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[4];
    int bf16;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOOOpnn", &o[0], &o[1], &o[2], &o[3], &bf16, &lo, &hi)) {
        return NULL;
    }
    mmf_buf b[4] = {{.held = 0}};
    mmf_plane img;
    int ok = mmf_take(o[0], &b[0], "rgb", 'B', 0) == 0 && mmf_take(o[1], &b[1], "ops", 'i', 0) == 0 &&
             mmf_take(o[2], &b[2], "consts", 'f', 0) == 0 && mmf_take(o[3], &b[3], "out", bf16 ? 'H' : 'f', 1) == 0;
    ok = ok && mmf_check_rgb(&b[0], "rgb", &img) == 0;
    const Py_ssize_t n_steps = ok ? b[1].view.shape[0] : 0;
    if (ok && (b[1].view.ndim != 1 || n_steps > MMF_MAX_STEPS)) {
        PyErr_Format(mmf_KernelError, "ops: expected 1 to %d steps", MMF_MAX_STEPS);
        ok = 0;
    }
    if (ok) {
        const Py_ssize_t ops_shape[1] = {n_steps}, consts_shape[2] = {n_steps, 3},
                         out_shape[3] = {3, img.rows, img.width};
        ok = mmf_check_dense(&b[1], "ops", 1, ops_shape) == 0 && mmf_check_dense(&b[2], "consts", 2, consts_shape) == 0 &&
             mmf_check_dense(&b[3], "out", 3, out_shape) == 0 && mmf_check_band(lo, hi, img.rows, "rows") == 0 &&
             mmf_check_disjoint(&b[3], "out", &b[0], "rgb") == 0 && mmf_check_disjoint(&b[3], "out", &b[1], "ops") == 0 &&
             mmf_check_disjoint(&b[3], "out", &b[2], "consts") == 0;
    }
    for (Py_ssize_t s = 0; ok && s < n_steps; s++) {
        const int32_t op = ((const int32_t *)b[1].view.buf)[s];
        if (op < MMF_OP_ADD || op > MMF_OP_DIV) {
            PyErr_Format(mmf_KernelError, "ops: step %zd is %d, not an operation (0 to 3)", s, (int)op);
            ok = 0;
        }
    }
    if (ok) {
        const mmf_norm_job job = {img.data, img.stride, img.rows, img.width, (const int32_t *)b[1].view.buf,
                                  (const float *)b[2].view.buf, (int)n_steps, bf16, b[3].view.buf};
        Py_BEGIN_ALLOW_THREADS
        mmf_norm_chw(&job, (int)lo, (int)hi);
        Py_END_ALLOW_THREADS
    }
    mmf_release(b, 4);
    return ok ? Py_NewRef(Py_None) : NULL;
}

/* planes_u8(rgb, out, lo, hi) */
static PyObject *planes_u8(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[2];
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOnn", &o[0], &o[1], &lo, &hi)) {
        return NULL;
    }
    mmf_buf b[2] = {{.held = 0}};
    mmf_plane img;
    int ok = mmf_take(o[0], &b[0], "rgb", 'B', 0) == 0 && mmf_take(o[1], &b[1], "out", 'B', 1) == 0;
    ok = ok && mmf_check_rgb(&b[0], "rgb", &img) == 0;
    if (ok) {
        const Py_ssize_t out_shape[3] = {3, img.rows, img.width};
        ok = mmf_check_dense(&b[1], "out", 3, out_shape) == 0 && mmf_check_band(lo, hi, img.rows, "rows") == 0 &&
             mmf_check_disjoint(&b[1], "out", &b[0], "rgb") == 0;
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        mmf_planes_u8(&img, (uint8_t *)b[1].view.buf, (int)lo, (int)hi);
        Py_END_ALLOW_THREADS
    }
    mmf_release(b, 2);
    return ok ? Py_NewRef(Py_None) : NULL;
}

/* lut_chw_u16(rgb, lut, out, lo, hi) */
static PyObject *lut_chw_u16(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o[3];
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOOnn", &o[0], &o[1], &o[2], &lo, &hi)) {
        return NULL;
    }
    mmf_buf b[3] = {{.held = 0}};
    mmf_plane img;
    int ok = mmf_take(o[0], &b[0], "rgb", 'B', 0) == 0 && mmf_take(o[1], &b[1], "lut", 'H', 0) == 0 &&
             mmf_take(o[2], &b[2], "out", 'H', 1) == 0;
    ok = ok && mmf_check_rgb(&b[0], "rgb", &img) == 0;
    if (ok) {
        const Py_ssize_t lut_shape[2] = {3, 256}, out_shape[3] = {3, img.rows, img.width};
        ok = mmf_check_dense(&b[1], "lut", 2, lut_shape) == 0 && mmf_check_dense(&b[2], "out", 3, out_shape) == 0 &&
             mmf_check_band(lo, hi, img.rows, "rows") == 0 && mmf_check_disjoint(&b[2], "out", &b[0], "rgb") == 0 &&
             mmf_check_disjoint(&b[2], "out", &b[1], "lut") == 0;
    }
    if (ok) {
        mmf_lut_chw_job job = {img.data, img.stride, img.rows, img.width, (const uint16_t *)b[1].view.buf,
                               (uint16_t *)b[2].view.buf};
        Py_BEGIN_ALLOW_THREADS
        mmf_lut_chw_u16(&job, (int)lo, (int)hi);
        Py_END_ALLOW_THREADS
    }
    mmf_release(b, 3);
    return ok ? Py_NewRef(Py_None) : NULL;
}

/* rgbx_to_rgb(schema_capsule, array_capsule, out): out is a C-contiguous uint8 [h, w, 3]. */
static PyObject *rgbx_to_rgb(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *schema, *array, *out_obj;
    if (!PyArg_ParseTuple(args, "OOO", &schema, &array, &out_obj)) {
        return NULL;
    }
    mmf_buf out = {.held = 0};
    const Py_ssize_t shape[3] = {-1, -1, 3};
    int ok = mmf_take(out_obj, &out, "out", 'B', 1) == 0 && mmf_check_dense(&out, "out", 3, shape) == 0;
    const uint8_t *in = NULL;
    const int64_t n = ok ? (int64_t)out.view.shape[0] * out.view.shape[1] : 0;
    ok = ok && (in = mmf_check_rgbx(schema, array, n)) != NULL;
    if (ok && (const uint8_t *)out.view.buf < in + n * 4 && in < (const uint8_t *)out.view.buf + out.view.len) {
        PyErr_SetString(mmf_KernelError, "out: overlaps the image's pixels");
        ok = 0;
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        mmf_pack_rgb(in, out.view.buf, (size_t)n);
        Py_END_ALLOW_THREADS
    }
    mmf_release(&out, 1);
    return ok ? Py_NewRef(Py_None) : NULL;
}

static PyMethodDef methods[] = {
    {"simd_level", simd_level, METH_NOARGS, "SIMD level of the kernels in use: 'avx2' or 'baseline'."},
    {"pil_coeffs", pil_coeffs, METH_VARARGS, "(in_size, out_size, filter) -> (ksize, bounds, weights) bytes."},
    {"resample_horizontal", resample_horizontal, METH_VARARGS, "(src, dst, bounds, weights, precision, lo, hi)"},
    {"resample_vertical", resample_vertical, METH_VARARGS, "(src, dst, bounds, weights, precision, lo, hi)"},
    {"patchify_qwen", patchify_qwen, METH_VARARGS, "(frames, lut, out, ps, merge, tps, lo, hi)"},
    {"patchify_bf16", patchify_bf16, METH_VARARGS, "(rgb, lut, pad, out, ps, lo, hi)"},
    {"lut_chw_u16", lut_chw_u16, METH_VARARGS, "(rgb, lut, out, lo, hi)"},
    {"planes_u8", planes_u8, METH_VARARGS, "(rgb, out, lo, hi)"},
    {"norm_chw", norm_chw, METH_VARARGS, "(rgb, ops, consts, out, bf16, lo, hi)"},
    {"rgbx_to_rgb", rgbx_to_rgb, METH_VARARGS, "(schema_capsule, array_capsule, out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = "mm_framework native kernels (docs/kernels.md).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    mmf_resample_init();
    PyObject *m = PyModule_Create(&module);
    if (!m) {
        return NULL;
    }
    mmf_KernelError = PyErr_NewExceptionWithDoc("mm_framework.kernels._native.KernelError",
                                                "A kernel argument failed its checks.", PyExc_ValueError, NULL);
    if (!mmf_KernelError || PyModule_AddObjectRef(m, "KernelError", mmf_KernelError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
