/* Pillow 13's resampling tables for 8-bit images (docs/kernels.md, "Pillow tables").
 *
 * Every step is f64 in Pillow's operation order: the weights must round to the same
 * fixed-point integers, and a one-ulp difference in a weight can move an output byte.
 * This file is built without floating-point contraction (setup.py) for the same reason.
 */
#include <math.h>

#include "native.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double bilinear(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

/* Keys' cubic with a = -0.5, each branch written as Pillow evaluates it. */
static double bicubic(double x) {
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0) {
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    }
    if (x < 2.0) {
        return (((x - 5) * x + 8) * x - 4) * a;
    }
    return 0.0;
}

static double sinc(double x) {
    if (x == 0.0) {
        return 1.0;
    }
    x = x * M_PI;
    return sin(x) / x;
}

static double lanczos(double x) {
    return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0;
}

static const struct {
    double (*f)(double);
    double support;
} FILTERS[MMF_N_FILTERS] = {{bilinear, 1.0}, {bicubic, 2.0}, {lanczos, 3.0}};

/* The sampled interval is the full axis: Pillow's box (0, 0, w, h), held as floats. */
static double axis_scale(int in_size, int out_size) {
    return (double)(float)in_size / out_size;
}

static double filter_scale(double scale) {
    return scale < 1.0 ? 1.0 : scale;
}

int mmf_pil_ksize(int in_size, int out_size, int filter) {
    double support = FILTERS[filter].support * filter_scale(axis_scale(in_size, out_size));
    return (int)ceil(support) * 2 + 1;
}

void mmf_pil_coeffs(int in_size, int out_size, int filter, int ksize, int32_t *bounds, int32_t *weights,
                    double *k) {
    double (*f)(double) = FILTERS[filter].f;
    double scale = axis_scale(in_size, out_size);
    double fscale = filter_scale(scale);
    double support = FILTERS[filter].support * fscale;
    double inv_fscale = 1.0 / fscale;
    for (int xx = 0; xx < out_size; xx++) {
        double center = (xx + 0.5) * scale;
        int xmin = (int)(center - support + 0.5);
        int xmax = (int)(center + support + 0.5);
        if (xmin < 0) {
            xmin = 0;
        }
        if (xmax > in_size) {
            xmax = in_size;
        }
        int n = xmax - xmin;
        if (n > ksize) { /* unreachable (support bounds the span); keeps writes in the row */
            n = ksize;
        }
        if (n < 0) {
            n = 0;
        }
        double total = 0.0;
        for (int x = 0; x < n; x++) {
            k[x] = f((x + xmin - center + 0.5) * inv_fscale);
            total += k[x];
        }
        int32_t *w = weights + (size_t)xx * ksize;
        for (int x = 0; x < ksize; x++) {
            double v = x < n ? (total != 0.0 ? k[x] / total : k[x]) : 0.0;
            /* Half away from zero, then truncation toward zero, as Pillow's (int) cast. */
            w[x] = (int32_t)(v < 0 ? -0.5 + v * (1 << MMF_PIL_PRECISION) : 0.5 + v * (1 << MMF_PIL_PRECISION));
        }
        bounds[2 * xx] = xmin;
        bounds[2 * xx + 1] = n;
    }
}
