/* derivatives_nnops.c -- derivative formulas of the nn operators.  Mirrors the nn rows of
 * tools/autograd/derivatives.yaml: each formula calls the op's *_backward kernel through
 * the dispatcher with the saved input (or result) and the forward's scalar arguments.
 * Those backward ops have no formulas of their own yet, so a second derivative through
 * them raises "the derivative for ... is not implemented". */
#include "derivatives_nnops.h"
#include "formula.h"

/* grads_out[0] = op(g, saved 0, n->args[params[0]], ...): the pattern of every pointwise
 * activation whose backward takes (grad_output, self, scalars...). */
static int
pointwise_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId id, int np,
               const int *params, PtlIValue tail)
{
    PtlTensorImpl *x;
    PtlIValue a[6];
    int k = 0;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0) {
        return -1;
    }
    a[k++] = ptl_iv_tensor(gi[0]);
    a[k++] = ptl_iv_tensor(x);
    for (int i = 0; i < np; i++) {
        a[k++] = n->args[params[i]];
    }
    if (tail.tag != PTL_IV_NONE) {
        a[k++] = tail;
    }
    int rc = put(n, go, 0, callv(id, k, a));
    ptl_decref(x);
    return rc;
}

static const int no_params[1] = {0};
static const int param1[1] = {1};
static const int param12[2] = {1, 2};

int
gelu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    const char *mode = ptl_iv_to_int(&n->args[1]) ? "tanh" : "none";
    return pointwise_grad(n, gi, go, PTL_OP_gelu_backward, 0, no_params, ptl_iv_string(mode));
}

int
silu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_silu_backward, 0, no_params, ptl_iv_none());
}

int
mish_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_mish_backward, 0, no_params, ptl_iv_none());
}

/* elu_backward(grad_output, alpha, scale, input_scale, is_result=False, self) */
int
elu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) < 0) {
        return -1;
    }
    PtlIValue a[6] = {ptl_iv_tensor(gi[0]), n->args[1], n->args[2], n->args[3], ptl_iv_bool(0),
                      ptl_iv_tensor(x)};
    int rc = put(n, go, 0, callv(PTL_OP_elu_backward, 6, a));
    ptl_decref(x);
    return rc;
}

int
leaky_relu_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_leaky_relu_backward, 1, param1, ptl_iv_bool(0));
}

/* leaky_relu_ saves its result, as PyTorch does (no copy of the input is kept) */
int
leaky_relu_result_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_leaky_relu_backward, 1, param1, ptl_iv_bool(1));
}

int
hardtanh_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardtanh_backward, 2, param12, ptl_iv_none());
}

int
softplus_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_softplus_backward, 2, param12, ptl_iv_none());
}

int
hardswish_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardswish_backward, 0, no_params, ptl_iv_none());
}

int
hardsigmoid_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardsigmoid_backward, 0, no_params, ptl_iv_none());
}

int
log_sigmoid_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_log_sigmoid_backward, 0, no_params, ptl_iv_none());
}

int
softshrink_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_softshrink_backward, 1, param1, ptl_iv_none());
}

int
hardshrink_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_hardshrink_backward, 1, param1, ptl_iv_none());
}

int
threshold_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return pointwise_grad(n, gi, go, PTL_OP_threshold_backward, 1, param1, ptl_iv_none());
}

/* _softmax_backward_data(g, result, dim, input_dtype) */
static int
softmax_grad(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, PtlOpId id)
{
    PtlTensorImpl *y;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &y) < 0) {
        return -1;
    }
    PtlIValue a[4] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(y), n->args[1],
                      ptl_iv_dtype(n->input_meta[0].dtype)};
    int rc = put(n, go, 0, callv(id, 4, a));
    ptl_decref(y);
    return rc;
}

int
softmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return softmax_grad(n, gi, go, PTL_OP__softmax_backward_data);
}

int
log_softmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return softmax_grad(n, gi, go, PTL_OP__log_softmax_backward_data);
}

/* nll_loss_nd(self, target, weight, reduction, ignore_index); saved: self, target, weight.
 * self gets nll_loss_nd_backward(g, self, target, weight, reduction, ignore_index); target
 * is an index and weight is refused when the call is recorded (derivatives.def). */
int
nll_loss_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *x = NULL, *t = NULL, *w = NULL;
    int rc = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &x) == 0 && saved(n, 1, &t) == 0 && saved(n, 2, &w) == 0) {
        PtlIValue a[6] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(x), ptl_iv_tensor(t),
                          w ? ptl_iv_tensor(w) : ptl_iv_none(), n->args[3], n->args[4]};
        rc = put(n, go, 0, callv(PTL_OP_nll_loss_nd_backward, 6, a));
    }
    ptl_xdecref(x);
    ptl_xdecref(t);
    ptl_xdecref(w);
    return rc;
}

/* embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse) */
int
embedding_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *idx;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &idx) < 0) {
        return -1;
    }
    PtlIValue a[5] = {ptl_iv_tensor(gi[0]), ptl_iv_tensor(idx),
                      ptl_iv_int(n->input_meta[0].sizes[0]), n->args[2], n->args[3]};
    int rc = put(n, go, 0, callv(PTL_OP_embedding_dense_backward, 5, a));
    ptl_decref(idx);
    return rc;
}
