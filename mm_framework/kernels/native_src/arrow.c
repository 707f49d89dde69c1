/* Pillow's RGB pixels read through the Arrow C data interface (docs/kernels.md,
 * "RGB export"). Pillow keeps an RGB image as 4-byte pixels (R, G, B, pad) and exports a
 * single-block image as an Arrow fixed_size_list<uint8>[4] array without copying:
 * mmf_check_rgbx checks that array, mmf_pack_rgb packs its pixels into HWC bytes. The
 * structs below are the interface's ABI (arrow.apache.org/docs/format/CDataInterface.html). */
#include "checks.h"
#include "tiles.h"

#include <string.h>

struct ArrowSchema {
    const char *format, *name, *metadata;
    int64_t flags, n_children;
    struct ArrowSchema **children, *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length, null_count, offset, n_buffers, n_children;
    const void **buffers;
    struct ArrowArray **children, *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

static int refuse(const char *what) {
    PyErr_Format(mmf_KernelError, "pixels: %s", what);
    return -1;
}

const uint8_t *mmf_check_rgbx(PyObject *schema_capsule, PyObject *array_capsule, int64_t n) {
    const struct ArrowSchema *s = PyCapsule_GetPointer(schema_capsule, "arrow_schema");
    const struct ArrowArray *a = s ? PyCapsule_GetPointer(array_capsule, "arrow_array") : NULL;
    if (!s || !a) {
        PyErr_Clear();
        refuse("expected the capsules (arrow_schema, arrow_array) of an Arrow C array");
        return NULL;
    }
    if (!s->release || !a->release) {
        refuse("the Arrow array was already released");
        return NULL;
    }
    if (!s->format || strcmp(s->format, "+w:4") != 0 || s->n_children != 1 || !s->children || !s->children[0] ||
        !s->children[0]->format || strcmp(s->children[0]->format, "C") != 0) {
        refuse("expected an Arrow fixed_size_list<uint8>[4] array (4-byte RGB pixels)");
        return NULL;
    }
    if (a->n_children != 1 || !a->children || !a->children[0] || a->null_count != 0 || a->offset < 0 ||
        a->length != n) {
        refuse("the Arrow array does not hold the image's pixels without nulls");
        return NULL;
    }
    const struct ArrowArray *c = a->children[0];
    if (c->n_buffers != 2 || !c->buffers || !c->buffers[1] || c->null_count != 0 || c->offset < 0 ||
        a->offset > (INT64_MAX / 4) - n || (a->offset + n) * 4 > c->length) {
        refuse("the Arrow array's bytes do not cover its pixels");
        return NULL;
    }
    return (const uint8_t *)c->buffers[1] + c->offset + a->offset * 4;
}

/* n pixels of 4 bytes -> 3 bytes: 4 pixels a step, each step's 16-byte store reaching 4
 * bytes into the next step's pixels (rewritten by it); the last steps exact. */
MMF_HOT void mmf_pack_rgb(const uint8_t *in, uint8_t *out, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 4) {
        const mmf_u8x16 v = load16(in + 4 * i);
        store16(out + 3 * i, __builtin_shufflevector(v, v, 0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0));
    }
    for (; i < n; i++) {
        memcpy(out + 3 * i, in + 4 * i, 3);
    }
}
