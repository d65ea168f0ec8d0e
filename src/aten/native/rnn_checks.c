/* rnn_checks.c -- the argument checks of rnn.c's fused cells and recurrent layer, with
 * PyTorch's messages: checkSizes in ATen/native/cuda/RNN.cu over TensorUtils.cpp's checkDim,
 * checkSameSize and checkNumel, and the device check of the CUDA kernels' wrappers. */
#include <string.h>

#include "../../c10/error.h"
#include "native.h"
#include "rnn_impl.h"

int
rnn_check_dim(const char *fn, RnnArg a, int dim)
{
    if (a.t->dim != dim) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected %d-dimensional tensor, but got "
                             "%d-dimensional tensor for argument #%d '%s' (while checking "
                             "arguments for %s)", dim, a.t->dim, a.pos, a.name, fn);
    }
    return 0;
}

int
rnn_check_same_size(const char *fn, RnnArg a, RnnArg b)
{
    if (a.t->dim != b.t->dim ||
        memcmp(a.t->sizes, b.t->sizes, sizeof(int64_t) * (size_t)a.t->dim) != 0) {
        char sa[128], sb[128];
        ptl_format_sizes(sa, sizeof(sa), a.t->dim, a.t->sizes);
        ptl_format_sizes(sb, sizeof(sb), b.t->dim, b.t->sizes);
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected tensor for argument #%d '%s' to have "
                             "same size as tensor for argument #%d '%s'; but %s does not equal "
                             "%s (while checking arguments for %s)", a.pos, a.name, b.pos,
                             b.name, sa, sb, fn);
    }
    return 0;
}

int
rnn_check_numel(const char *fn, RnnArg a, int64_t numel)
{
    if (a.t->numel != numel) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected tensor for argument #%d '%s' to have "
                             "%lld elements; but it actually has %lld elements (while checking "
                             "arguments for %s)", a.pos, a.name, (long long)numel,
                             (long long)a.t->numel, fn);
    }
    return 0;
}

/* Tensors args[0..n) (NULL entries skipped) share args[0]'s dtype, float32 or float64. */
int
rnn_check_dtypes(const PtlOperator *op, const RnnArg *args, int n)
{
    PtlDtype dt = args[0].t->dtype;
    if (dt != PTL_DTYPE_FLOAT32 && dt != PTL_DTYPE_FLOAT64) {
        return ptl_dtype_not_implemented(op, dt);
    }
    for (int i = 1; i < n; i++) {
        if (args[i].t != NULL && args[i].t->dtype != dt) {
            return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                                 ptl_dtype_legacy_name(dt),
                                 ptl_dtype_legacy_name(args[i].t->dtype));
        }
    }
    return 0;
}

/* The forward cells' checks: gates [B, G] alike, biases [G] both or neither, the state
 * with B * G / factor elements.  Sets *hidden = G / factor. */
int
rnn_check_cell(const PtlOperator *op, const char *fn, const PtlIValue *s, const char *state_name,
           int64_t factor, int64_t *hidden)
{
    RnnArg a[5] = {{s[0].u.t, "input_gates", 1}, {s[1].u.t, "hidden_gates", 2},
                {s[2].u.t, state_name, 3},
                {s[3].tag == PTL_IV_TENSOR ? s[3].u.t : NULL, "input_bias", 4},
                {s[4].tag == PTL_IV_TENSOR ? s[4].u.t : NULL, "hidden_bias", 5}};
    int64_t g;
    if (rnn_check_dtypes(op, a, 5) < 0 || rnn_check_dim(fn, a[0], 2) < 0 ||
        rnn_check_same_size(fn, a[0], a[1]) < 0) {
        return -1;
    }
    g = a[0].t->sizes[1];
    if (g % factor != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: the gates' size %lld is not a multiple of "
                             "%lld", fn, (long long)g, (long long)factor);
    }
    if ((a[3].t == NULL) != (a[4].t == NULL)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: input_bias and hidden_bias must be given "
                             "together", fn);
    }
    if (a[3].t != NULL && (rnn_check_dim(fn, a[3], 1) < 0 || rnn_check_numel(fn, a[3], g) < 0 ||
                           rnn_check_same_size(fn, a[3], a[4]) < 0)) {
        return -1;
    }
    if (rnn_check_dim(fn, a[2], 2) < 0 ||
        rnn_check_numel(fn, a[2], a[0].t->sizes[0] * (g / factor)) < 0) {
        return -1;
    }
    *hidden = g / factor;
    return 0;
}

/* Every tensor of t[0..k) (NULL skipped) on t[0]'s device, else PyTorch's error naming
 * argument names[i] of fn. */
int
rnn_check_same_device(const char *fn, PtlTensorImpl *const *t, const char *const *names, int k)
{
    for (int i = 1; i < k; i++) {
        if (t[i] != NULL && !ptl_device_equal(t[i]->device, t[0]->device)) {
            const PtlDevice d0 = t[0]->device, d = t[i]->device;
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Expected all tensors to be on the same device, but found at "
                                 "least two devices, %s%s and %s%s! (when checking argument "
                                 "for argument %s in method wrapper_CUDA__%s)",
                                 ptl_device_type_name(d0.type),
                                 d0.type == PTL_DEVICE_CPU ? "" : ":0",
                                 ptl_device_type_name(d.type),
                                 d.type == PTL_DEVICE_CPU ? "" : ":0", names[i], fn);
        }
    }
    return 0;
}

/* ---- the recurrent layer's ---- */

int
rnn_check_size(const char *fn, RnnArg a, int dim, const int64_t *sizes)
{
    if (rnn_check_dim(fn, a, dim) < 0) {
        return -1;
    }
    if (memcmp(a.t->sizes, sizes, sizeof(int64_t) * (size_t)dim) != 0) {
        char want[128], got[128];
        ptl_format_sizes(want, sizeof(want), dim, sizes);
        ptl_format_sizes(got, sizeof(got), a.t->dim, a.t->sizes);
        return ptl_error_set(PTL_ERR_RUNTIME, "Expected tensor of size %s, but got tensor of "
                             "size %s for argument #%d '%s' (while checking arguments for %s)",
                             want, got, a.pos, a.name, fn);
    }
    return 0;
}

int
rnn_check_given(const char *fn, RnnArg a, int wanted, const char *msg)
{
    if ((a.t != NULL) != wanted) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: %s", fn, msg);
    }
    return 0;
}

int
rnn_check_layer(const char *fn, int mode, int64_t B, int64_t G, int64_t I, RnnArg hx,
                RnnArg cx, RnnArg w_hh, RnnArg w_hr, int64_t *H, int64_t *P)
{
    static const int64_t gates[4] = {1, 1, 4, 3};   /* ORDER MODE */
    int lstm = mode == MODE_LSTM;
    if (mode < MODE_RNN_RELU || mode > MODE_GRU) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: unknown mode %d", fn, mode);
    }
    if (G % gates[mode] != 0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: the gates' size %lld is not a multiple of "
                             "%lld", fn, (long long)G, (long long)gates[mode]);
    }
    *H = G / gates[mode];
    if (rnn_check_given(fn, cx, lstm, lstm ? "an LSTM needs cx" : "cx is for LSTM only") < 0 ||
        (!lstm && rnn_check_given(fn, w_hr, 0, "w_hr is for LSTM only") < 0) ||
        (w_hr.t != NULL && rnn_check_dim(fn, w_hr, 2) < 0)) {
        return -1;
    }
    *P = w_hr.t != NULL ? w_hr.t->sizes[0] : *H;
    int64_t hs[2] = {B, *P}, cs[2] = {B, *H}, ws[2] = {G, I + *P}, rs[2] = {*P, *H};
    return rnn_check_size(fn, hx, 2, hs) < 0 || (lstm && rnn_check_size(fn, cx, 2, cs) < 0) ||
                   rnn_check_size(fn, w_hh, 2, ws) < 0 ||
                   (w_hr.t != NULL && rnn_check_size(fn, w_hr, 2, rs) < 0) ? -1 : 0;
}

int
rnn_check_batch_sizes(const char *fn, RnnArg a, int64_t T, int64_t B, PtlTensorImpl **c)
{
    *c = NULL;
    if (a.t == NULL) {
        return 0;
    }
    if (a.t->dtype != PTL_DTYPE_INT64) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s: batch_sizes must be int64, got %s", fn,
                             ptl_dtype_legacy_name(a.t->dtype));
    }
    if (rnn_check_size(fn, a, 1, &T) < 0 || (*c = ptl_contiguous(a.t)) == NULL) {
        return -1;
    }
    const int64_t *bs = (const int64_t *)ptl_tensor_data(*c);
    for (int64_t t = 0; t < T; t++) {
        if (bs[t] < 0 || bs[t] > B) {
            PTL_CLEAR(*c);
            return ptl_error_set(PTL_ERR_RUNTIME, "%s: batch_sizes[%lld] = %lld is not in [0, "
                                 "%lld]", fn, (long long)t, (long long)bs[t], (long long)B);
        }
    }
    return 0;
}
