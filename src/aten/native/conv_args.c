/* conv_args.c -- the argument checks of convolution and convolution_backward, in the order
 * of PyTorch's check_shape_forward (ATen/native/Convolution.cpp): strides, padding, dilation
 * and output padding read into ConvArgs, dtypes, groups, ranks, channels, bias, the output
 * padding, and every spatial extent checked against int64 before conv.c computes with it. */
#include <stdint.h>
#include <stdlib.h>

#include "../../c10/error.h"
#include "conv_impl.h"

/* Reads an int-list argument of a spatial op into v[NN_SPATIAL] right-aligned (leading
 * dims get `fill`), expanding a single value to nd dims. */
static int
conv_param(const PtlIValue *iv, int nd, const char *name, int64_t fill, int64_t *v)
{
    int64_t n = iv->u.il.n;
    if (n != nd && n != 1) {
        char buf[128];
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "expected %s to be a single integer value or a list of %d values to "
                             "match the convolution dimensions, but got %s=%s",
                             name, nd, name, ptl_format_sizes(buf, sizeof(buf), n, iv->u.il.data));
    }
    for (int i = 0; i < NN_SPATIAL; i++) {
        int u = i - (NN_SPATIAL - nd);
        v[i] = u < 0 ? fill : iv->u.il.data[n == 1 ? 0 : u];
    }
    return 0;
}


/* The checks of check_shape_forward common to both directions, in PyTorch's order: dtypes,
 * groups, stride, padding, dilation, the input's rank and the weight's first dim. */
static int
conv_check_params(const PtlTensorImpl *x, const PtlTensorImpl *w, const PtlTensorImpl *bias,
                  const ConvArgs *a)
{
    char b1[128], b2[128];
    int nd = a->nd;
    if (x->dtype != w->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             ptl_dtype_legacy_name(x->dtype), ptl_dtype_legacy_name(w->dtype));
    }
    if (bias != NULL && bias->dtype != x->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Input type (%s) and bias type (%s) should be the same",
                             ptl_dtype_cpp_name(x->dtype), ptl_dtype_cpp_name(bias->dtype));
    }
    if (a->groups <= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "non-positive groups is not supported");
    }
    for (int i = 3 - nd; i < 3; i++) {
        if (a->stride[i] <= 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "non-positive stride is not supported");
        }
        if (a->pad[i] < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "negative padding is not supported");
        }
        if (a->opad[i] < 0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "negative output_padding is not supported");
        }
    }
    for (int i = 3 - nd; i < 3; i++) {
        if (a->dil[i] <= 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "dilation should be greater than zero, but got %s",
                                 ptl_format_sizes(b1, sizeof(b1), nd, a->dil + 3 - nd));
        }
    }
    if (x->dim != w->dim) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected %d-dimensional input for %d-dimensional weight %s, but got "
                             "%d-dimensional input of size %s instead",
                             (int)w->dim, (int)w->dim,
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes),
                             (int)x->dim, ptl_format_sizes(b2, sizeof(b2), x->dim, x->sizes));
    }
    if (w->sizes[0] < a->groups) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given groups=%lld, expected weight to be at least %lld at dimension "
                             "0, but got weight of size %s instead",
                             (long long)a->groups, (long long)a->groups,
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes));
    }
    if (w->sizes[0] % a->groups != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given groups=%lld, expected weight to be divisible by %lld at "
                             "dimension 0, but got weight of size [%s] instead",
                             (long long)a->groups, (long long)a->groups,
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes));
    }
    return 0;
}

/* The rest of check_shape_forward for a plain convolution: input channels, bias size and
 * the kernel against the padded input. */
static int
conv_check_plain(const PtlTensorImpl *x, const PtlTensorImpl *w, const PtlTensorImpl *bias,
                 const ConvArgs *a)
{
    char b1[128], b2[128];
    int nd = a->nd;
    if (x->sizes[1] != w->sizes[1] * a->groups) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given groups=%lld, weight of size %s, expected input%s to have "
                             "%lld channels, but got %lld channels instead",
                             (long long)a->groups,
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes),
                             ptl_format_sizes(b2, sizeof(b2), x->dim, x->sizes),
                             (long long)(w->sizes[1] * a->groups), (long long)x->sizes[1]);
    }
    if (bias != NULL && (bias->dim != 1 || bias->numel != w->sizes[0])) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given weight of size %s, expected bias to be 1-dimensional with "
                             "%lld elements, but got bias of size %s instead",
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes),
                             (long long)w->sizes[0],
                             ptl_format_sizes(b2, sizeof(b2), bias->dim, bias->sizes));
    }
    int bad = 0;
    int64_t padded[3], eff[3];
    for (int i = 0; i < nd; i++) {
        int u = 3 - nd + i;
        padded[i] = x->sizes[2 + i] + 2 * a->pad[u];
        eff[i] = a->dil[u] * (w->sizes[2 + i] - 1) + 1;
        bad |= padded[i] < eff[i];
    }
    if (bad) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Calculated padded input size per channel: %s. Kernel size: %s. "
                             "Kernel size can't be greater than actual input size",
                             ptl_format_ints(b1, sizeof(b1), nd, padded, "(", " x ", ")"),
                             ptl_format_ints(b2, sizeof(b2), nd, eff, "(", " x ", ")"));
    }
    return 0;
}

/* output_padding must stay below stride or dilation in every spatial dim (PyTorch's
 * message names the dims of a 2-D or 3-D transposed convolution). */
static int
conv_check_output_padding(const ConvArgs *a)
{
    int nd = a->nd;
    for (int i = 3 - nd; i < 3; i++) {
        if (a->opad[i] >= a->stride[i] && a->opad[i] >= a->dil[i]) {
            int64_t op2[2], st2[2], di2[2];
            for (int k = 0; k < 2; k++) {
                int u = nd == 1 ? (k == 0 ? -1 : 2) : (nd == 2 ? 1 + k : k);
                op2[k] = u < 0 ? 0 : a->opad[u];
                st2[k] = u < 0 ? 1 : a->stride[u];
                di2[k] = u < 0 ? 1 : a->dil[u];
            }
            if (nd == 3) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "output padding must be smaller than either stride or "
                                     "dilation, but got output_padding_depth: %lld "
                                     "output_padding_height: %lld output_padding_width: %lld "
                                     "stride_depth: %lld stride_height: %lld stride_width: %lld "
                                     "dilation_depth: %lld dilation_height: %lld "
                                     "dilation_width: %lld",
                                     (long long)a->opad[0], (long long)a->opad[1],
                                     (long long)a->opad[2], (long long)a->stride[0],
                                     (long long)a->stride[1], (long long)a->stride[2],
                                     (long long)a->dil[0], (long long)a->dil[1],
                                     (long long)a->dil[2]);
            }
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "output padding must be smaller than either stride or dilation, "
                                 "but got output_padding_height: %lld output_padding_width: %lld "
                                 "stride_height: %lld stride_width: %lld dilation_height: %lld "
                                 "dilation_width: %lld",
                                 (long long)op2[0], (long long)op2[1], (long long)st2[0],
                                 (long long)st2[1], (long long)di2[0], (long long)di2[1]);
        }
    }
    return 0;
}

/* The rest of check_shape_forward for a transposed convolution: input channels, bias size,
 * output padding and the output size. */
static int
conv_check_transposed(const PtlTensorImpl *x, const PtlTensorImpl *w, const PtlTensorImpl *bias,
                      const ConvArgs *a)
{
    char b1[128], b2[128];
    int nd = a->nd;
    if (x->sizes[1] != w->sizes[0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given transposed=1, weight of size %s, expected input%s to have "
                             "%lld channels, but got %lld channels instead",
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes),
                             ptl_format_sizes(b2, sizeof(b2), x->dim, x->sizes),
                             (long long)w->sizes[0], (long long)x->sizes[1]);
    }
    if (bias != NULL && (bias->dim != 1 || bias->numel != w->sizes[1] * a->groups)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given transposed=1, weight of size %s, expected bias to be "
                             "1-dimensional with %lld elements, but got bias of size %s instead",
                             ptl_format_sizes(b1, sizeof(b1), w->dim, w->sizes),
                             (long long)(w->sizes[1] * a->groups),
                             ptl_format_sizes(b2, sizeof(b2), bias->dim, bias->sizes));
    }
    if (conv_check_output_padding(a) < 0) {
        return -1;
    }
    int bad = 0;
    int64_t outs[3];
    for (int i = 0; i < nd; i++) {
        int u = 3 - nd + i;
        outs[i] = (x->sizes[2 + i] - 1) * a->stride[u] - 2 * a->pad[u] +
                  a->dil[u] * (w->sizes[2 + i] - 1) + a->opad[u] + 1;
        bad |= outs[i] <= 0;
    }
    if (bad) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Given input size per channel: %s. Calculated output size per "
                             "channel: %s. Output size is too small",
                             ptl_format_ints(b1, sizeof(b1), nd, x->sizes + 2, "(", " x ", ")"),
                             ptl_format_ints(b2, sizeof(b2), nd, outs, "(", " x ", ")"));
    }
    return 0;
}

/* Every spatial extent the checks and conv_geom compute, with overflow checks: a padding,
 * dilation or stride near int64's range must raise, never wrap into a plausible size. */
static int
conv_check_extents(const PtlTensorImpl *x, const PtlTensorImpl *w, const ConvArgs *a)
{
    int64_t area = 1;   /* of a transposed convolution's output image */
    for (int i = 0; i < a->nd; i++) {
        int u = 3 - a->nd + i;
        int64_t in = x->sizes[2 + i], k1 = w->sizes[2 + i] - 1, pad2, reach, v;
        int wraps = __builtin_mul_overflow(a->pad[u], 2, &pad2) ||
                    __builtin_mul_overflow(a->dil[u], k1, &reach) ||
                    __builtin_add_overflow(reach, 1, &v) || __builtin_add_overflow(in, pad2, &v);
        if (a->transposed && !wraps) {
            wraps = __builtin_mul_overflow(in - 1, a->stride[u], &v) ||
                    __builtin_sub_overflow(v, pad2, &v) || __builtin_add_overflow(v, reach, &v) ||
                    __builtin_add_overflow(v, a->opad[u], &v) || __builtin_add_overflow(v, 1, &v) ||
                    (v > 0 && __builtin_mul_overflow(area, v, &area));
        }
        if (wraps) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "the convolution's spatial dimension %d (size %lld, kernel size "
                                 "%lld, stride %lld, padding %lld, dilation %lld) has an extent or output "
                                 "size that overflows int64",
                                 i, (long long)in, (long long)(k1 + 1), (long long)a->stride[u],
                                 (long long)a->pad[u], (long long)a->dil[u]);
        }
    }
    return 0;
}

int
ptl_conv_check(PtlTensorImpl *x, PtlTensorImpl *w, PtlTensorImpl *bias, const PtlIValue *s,
               ConvArgs *a)
{
    int nd = w->dim - 2;
    if (w->dim < 3 || w->dim > 5) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "weight should have at least three dimensions and at most five, "
                             "but got %d", (int)w->dim);
    }
    a->nd = nd;
    a->transposed = s[6].u.b;
    a->groups = s[8].u.i;
    if (conv_param(&s[3], nd, "stride", 1, a->stride) < 0 ||
        conv_param(&s[4], nd, "padding", 0, a->pad) < 0 ||
        conv_param(&s[5], nd, "dilation", 1, a->dil) < 0 ||
        conv_param(&s[7], nd, "output_padding", 0, a->opad) < 0) {
        return -1;
    }
    if (conv_check_params(x, w, bias, a) < 0 || conv_check_extents(x, w, a) < 0) {
        return -1;
    }
    return a->transposed ? conv_check_transposed(x, w, bias, a) : conv_check_plain(x, w, bias, a);
}

void *
conv_alloc(size_t nbytes)
{
    void *p = aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
    if (p == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "conv: out of memory allocating %zu bytes", nbytes);
    }
    return p;
}
