/* sigmoid_add.c -- the handbook's custom operator as a C extension: z = sigmoid(x) + y,
 * registered as myops::sigmoid_add with a CPU kernel and its backward at the Autograd key.
 * Build it with setup.py (BuildExtension) or pytorchlite.utils.cpp_extension.load. */
#include <math.h>
#include <string.h>

#include <pytorchlite/ptl_api.h>

/* t as a contiguous tensor (new reference), through the dispatcher's aten::contiguous. */
static PtlApiTensor *
contiguous(PtlApiTensor *t)
{
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *r = NULL;
    if (s != NULL && ptl_api_push_tensor(s, t) == 0 && ptl_api_call("aten::contiguous", s) == 0) {
        r = ptl_api_pop_tensor(s);
    }
    ptl_api_stack_free(s);
    return r;
}

static int
check_args(PtlApiTensor *x, PtlApiTensor *y)
{
    PtlApiDtype dt = ptl_api_dtype(x);
    if (dt != PTL_API_FLOAT32 && dt != PTL_API_FLOAT64) {
        return ptl_api_set_error(PTL_API_TYPE_ERROR,
                                 "sigmoid_add: expected float32 or float64 tensors");
    }
    if (ptl_api_dtype(y) != dt || ptl_api_dim(x) != ptl_api_dim(y) ||
        memcmp(ptl_api_sizes(x), ptl_api_sizes(y), sizeof(int64_t) * (size_t)ptl_api_dim(x))) {
        return ptl_api_set_error(PTL_API_RUNTIME_ERROR,
                                 "sigmoid_add: x and y must have the same shape and dtype");
    }
    return 0;
}

/* z[i] = 1 / (1 + exp(-x[i])) + y[i] over contiguous x, y, z of n elements. */
static void
sigmoid_add_loop(const void *x, const void *y, void *z, int64_t n, PtlApiDtype dt)
{
    if (dt == PTL_API_FLOAT64) {
        const double *a = x, *b = y;
        double *c = z;
        for (int64_t i = 0; i < n; i++) {
            c[i] = 1.0 / (1.0 + exp(-a[i])) + b[i];
        }
        return;
    }
    const float *a = x, *b = y;
    float *c = z;
    for (int64_t i = 0; i < n; i++) {
        c[i] = 1.0f / (1.0f + expf(-a[i])) + b[i];
    }
}

/* myops::sigmoid_add(Tensor x, Tensor y) -> Tensor, on the CPU */
static int
sigmoid_add_cpu(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0), *y = ptl_api_stack_tensor(stack, 1);
    PtlApiTensor *xc = NULL, *yc = NULL, *z = NULL;
    int rc = -1;
    if (x == NULL || y == NULL || check_args(x, y) < 0 || (xc = contiguous(x)) == NULL ||
        (yc = contiguous(y)) == NULL || (z = ptl_api_empty_like(xc)) == NULL) {
        goto done;
    }
    sigmoid_add_loop(ptl_api_data_ptr(xc), ptl_api_data_ptr(yc), ptl_api_data_ptr(z),
                     ptl_api_numel(z), ptl_api_dtype(z));
    ptl_api_stack_clear(stack);
    rc = ptl_api_push_tensor(stack, z);
done:
    ptl_api_release(xc);
    ptl_api_release(yc);
    ptl_api_release(z);
    return rc;
}

/* dz/dx = s * (1 - s) with s = sigmoid(x); dz/dy = 1 */
static int
sigmoid_add_backward(PtlApiAutogradContext *ctx, PtlApiTensor *const *grad_outputs,
                     PtlApiTensor **grad_inputs, void *data)
{
    (void)data;
    PtlApiTensor *saved = NULL, *x = NULL, *g = NULL, *gx = NULL;
    int rc = -1;
    if (ptl_api_ctx_needs_input_grad(ctx, 0)) {
        if ((saved = ptl_api_ctx_saved_input(ctx, 0)) == NULL || (x = contiguous(saved)) == NULL ||
            (g = contiguous(grad_outputs[0])) == NULL || (gx = ptl_api_empty_like(x)) == NULL) {
            goto done;
        }
        int64_t n = ptl_api_numel(x);
        if (ptl_api_dtype(x) == PTL_API_FLOAT64) {
            const double *a = ptl_api_data_ptr(x), *d = ptl_api_data_ptr(g);
            double *out = ptl_api_data_ptr(gx);
            for (int64_t i = 0; i < n; i++) {
                double s = 1.0 / (1.0 + exp(-a[i]));
                out[i] = d[i] * s * (1.0 - s);
            }
        }
        else {
            const float *a = ptl_api_data_ptr(x), *d = ptl_api_data_ptr(g);
            float *out = ptl_api_data_ptr(gx);
            for (int64_t i = 0; i < n; i++) {
                float s = 1.0f / (1.0f + expf(-a[i]));
                out[i] = d[i] * s * (1.0f - s);
            }
        }
        grad_inputs[0] = gx;
        gx = NULL;
    }
    if (ptl_api_ctx_needs_input_grad(ctx, 1)) {
        ptl_api_retain(grad_outputs[0]);
        grad_inputs[1] = grad_outputs[0];
    }
    rc = 0;
done:
    ptl_api_release(saved);
    ptl_api_release(x);
    ptl_api_release(g);
    ptl_api_release(gx);
    return rc;
}

PTL_LIBRARY(myops, m)
{
    ptl_api_def(m, "sigmoid_add(Tensor x, Tensor y) -> Tensor");
}

PTL_LIBRARY_IMPL(myops, CPU, m)
{
    ptl_api_impl(m, "sigmoid_add", sigmoid_add_cpu, NULL);
}

PTL_LIBRARY_IMPL(myops, Autograd, m)
{
    ptl_api_impl_autograd(m, "sigmoid_add", sigmoid_add_backward, NULL);
}
