/* sigmoid_add.c -- the handbook's custom operator as a C extension: z = sigmoid(x) + y,
 * registered as myops::sigmoid_add with a CPU kernel and its backward at the Autograd key.
 * Build it with setup.py (BuildExtension) or pytorchlite.utils.cpp_extension.load. */
#include <math.h>
#include <string.h>

#include <pytorchlite/ptl_api.h>

/* The operator `name` of the dispatcher on a (and b unless NULL); a new reference, or NULL
 * with the error set. */
static PtlApiTensor *
call(const char *name, PtlApiTensor *a, PtlApiTensor *b)
{
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *r = NULL;
    if (s != NULL && ptl_api_push_tensor(s, a) == 0 &&
        (b == NULL || ptl_api_push_tensor(s, b) == 0) && ptl_api_call(name, s) == 0) {
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
    if (x == NULL || y == NULL || check_args(x, y) < 0 ||
        (xc = call("aten::contiguous", x, NULL)) == NULL ||
        (yc = call("aten::contiguous", y, NULL)) == NULL || (z = ptl_api_empty_like(xc)) == NULL) {
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

/* dz/dx = s * (1 - s) with s = sigmoid(x), dz/dy = 1.  Written with dispatcher ops, so it
 * runs on any device and is itself differentiable (create_graph=True). */
static int
sigmoid_add_backward(PtlApiAutogradContext *ctx, PtlApiTensor *const *grad_outputs,
                     PtlApiTensor **grad_inputs, void *data)
{
    (void)data;
    PtlApiTensor *grad = grad_outputs[0], *x = NULL, *s = NULL, *s2 = NULL, *ds = NULL;
    int rc = -1;
    if (ptl_api_ctx_needs_input_grad(ctx, 0)) {
        if ((x = ptl_api_ctx_saved_input(ctx, 0)) == NULL ||
            (s = call("aten::sigmoid", x, NULL)) == NULL ||
            (s2 = call("aten::mul.Tensor", s, s)) == NULL ||
            (ds = call("aten::sub.Tensor", s, s2)) == NULL ||
            (grad_inputs[0] = call("aten::mul.Tensor", grad, ds)) == NULL) {
            goto done;
        }
    }
    if (ptl_api_ctx_needs_input_grad(ctx, 1)) {
        ptl_api_retain(grad);
        grad_inputs[1] = grad;
    }
    rc = 0;
done:
    ptl_api_release(x);
    ptl_api_release(s);
    ptl_api_release(s2);
    ptl_api_release(ds);
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
