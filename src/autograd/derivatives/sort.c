/* derivatives/sort.c -- derivative formulas of the sorting, selection and scan ops of
 * aten/native/sort.c: sort, topk, kthvalue, median, nanmedian, mode, cummax, cummin,
 * logcumsumexp.  Mirrors their rows of tools/autograd/derivatives.yaml and
 * value_selecting_reduction_backward, evenly_distribute_backward and
 * logcumsumexp_backward in FunctionsManual.cpp. */
#include <float.h>
#include <math.h>

#include "../formula.h"

/* t.unsqueeze(d) when keepdim was False (new ref) */
static PtlTensorImpl *
keep_dim(PtlTensorImpl *t, int64_t d, int keepdim)
{
    if (keepdim) {
        ptl_incref(t);
        return t;
    }
    PtlIValue a[2] = {ptl_iv_tensor(t), ptl_iv_int(d)};
    return callv(PTL_OP_unsqueeze, 2, a);
}

/* sort, sort.stable, topk, kthvalue, median.dim, nanmedian.dim, mode, cummax, cummin:
 * self gets g scattered to the saved indices (slot 0) along dim; scan indices repeat, so
 * cummax / cummin add */
int
value_selecting_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *idx = NULL, *z = NULL, *g = NULL, *ix = NULL;
    const PtlInputMeta *m = &n->input_meta[0];
    int id = n->op->id, keepdim = 1, rc = -1;
    int64_t d;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    if (m->dim == 0) {
        return put_same(n, go, 0, gi[0]);
    }
    d = ptl_iv_to_int(&n->args[id == PTL_OP_sort_stable || id == PTL_OP_topk ||
                               id == PTL_OP_kthvalue ? 2 : 1]);
    if (id == PTL_OP_kthvalue) {
        keepdim = n->args[3].u.b;
    }
    else if (id == PTL_OP_median_dim || id == PTL_OP_nanmedian_dim || id == PTL_OP_mode) {
        keepdim = n->args[2].u.b;
    }
    if (ptl_wrap_dim(&d, m->dim) < 0 || saved(n, 0, &idx) < 0) {
        goto done;
    }
    if ((z = input_zeros(n, 0, gi[0]->dtype)) == NULL ||
        (g = keep_dim(gi[0], d, keepdim)) == NULL || (ix = keep_dim(idx, d, keepdim)) == NULL) {
        goto done;
    }
    {
        PtlIValue a[4] = {ptl_iv_tensor(z), ptl_iv_int(d), ptl_iv_tensor(ix), ptl_iv_tensor(g)};
        int add = id == PTL_OP_cummax || id == PTL_OP_cummin;
        rc = put(n, go, 0, callv(add ? PTL_OP_scatter_add : PTL_OP_scatter_src, 4, a));
    }
done:
    ptl_xdecref(ix);
    ptl_xdecref(g);
    ptl_xdecref(z);
    ptl_xdecref(idx);
    return rc;
}

/* median / nanmedian(self) -> result: g split evenly among the elements equal to the
 * result (the NaNs when it is NaN) */
int
evenly_distribute_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *self = sv(sc, n, 0), *res = sv(sc, n, 1);
    if (self == NULL || res == NULL) {
        return scope_end(sc, -1);
    }
    PtlTensorImpl *mask = ptl_item_readable(res) && isnan(ptl_item_double(res))
                              ? f1(sc, PTL_OP_isnan, self)
                              : EQ(self, res);
    PtlIValue c[2] = {ptl_iv_tensor(mask), ptl_iv_dtype(gi[0]->dtype)};
    PtlTensorImpl *mf = fv(sc, PTL_OP__to_copy, 2, c);
    return scope_end(sc, give(n, go, 0, MUL(mf, DIV(gi[0], f1(sc, PTL_OP_sum, mf)))));
}

/* x reversed along dim d (index_select with n-1 .. 0: differentiable), new ref or NULL */
static PtlTensorImpl *
flip_dim(PtlTensorImpl *x, int64_t d)
{
    int64_t len = x->sizes[d];
    PtlTensorImpl *rev = ptl_empty(1, &len, PTL_DTYPE_INT64, x->device), *r;
    if (rev == NULL) {
        return NULL;
    }
    int64_t *p = (int64_t *)ptl_tensor_data(rev);
    for (int64_t i = 0; i < len; i++) {
        p[i] = len - 1 - i;
    }
    PtlIValue a[3] = {ptl_iv_tensor(x), ptl_iv_int(d), ptl_iv_tensor(rev)};
    r = callv(PTL_OP_index_select, 3, a);
    ptl_decref(rev);
    return r;
}

/* log(sum_{i >= j} exp(x_i)) along d: logcumsumexp of the reversed x, reversed back */
static PtlTensorImpl *
reverse_logcumsumexp(PtlTensorImpl *x, int64_t d)
{
    PtlTensorImpl *f = flip_dim(x, d), *c, *r;
    if (f == NULL) {
        return NULL;
    }
    PtlIValue a[2] = {ptl_iv_tensor(f), ptl_iv_int(d)};
    c = callv(PTL_OP_logcumsumexp, 2, a);
    ptl_decref(f);
    if (c == NULL) {
        return NULL;
    }
    r = flip_dim(c, d);
    ptl_decref(c);
    return r;
}

/* exp(reverse_logcumsumexp(where(sign * g > 0, log|g|, lowest) - result) + self): the
 * positive (sign 1) or negative (sign -1) part of the gradient, without overflow */
static PtlTensorImpl *
lcse_part(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *logabs, PtlTensorImpl *self,
          PtlTensorImpl *res, int64_t d, double sign)
{
    PtlTensorImpl *zero = own(sc, ptl_scalar_tensor(0.0, g->dtype, g->device));
    PtlTensorImpl *low = own(sc, ptl_scalar_tensor(g->dtype == PTL_DTYPE_FLOAT64 ? -DBL_MAX
                                                                               : -FLT_MAX,
                                                   g->dtype, g->device));
    PtlTensorImpl *cond = sign > 0 ? GT(g, zero) : LT(g, zero);
    PtlTensorImpl *diff = SUB(WHERE(cond, logabs, low), res);
    PtlTensorImpl *rl = diff ? own(sc, reverse_logcumsumexp(diff, d)) : NULL;
    return f1(sc, PTL_OP_exp, ADD(rl, self));
}

/* logcumsumexp(self, dim) -> result: self gets pos - neg (lcse_part), which equals
 * sum_{i >= j} g_i exp(self_j - result_i); for a complex self the factors are conjugated
 * (Note [Complex autograd]), and the sum needs no split by sign:
 * conj(exp(reverse_logcumsumexp(log(conj(g)) - result) + self)) */
int
logcumsumexp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    int64_t d = ptl_iv_to_int(&n->args[1]);
    if (!NEEDS(0)) {
        return 0;
    }
    if (gi[0]->dim == 0 || gi[0]->numel == 0) {
        return put_same(n, go, 0, gi[0]);
    }
    if (ptl_wrap_dim(&d, gi[0]->dim) < 0) {
        return -1;
    }
    PtlTensorImpl *self = sv(sc, n, 0), *res = sv(sc, n, 1);
    if (ptl_dtype_is_complex(gi[0]->dtype)) {
        PtlTensorImpl *diff = SUB(f1(sc, PTL_OP_log, CONJ(gi[0])), res);
        PtlTensorImpl *rl = diff ? own(sc, reverse_logcumsumexp(diff, d)) : NULL;
        return scope_end(sc, give(n, go, 0, CONJ(f1(sc, PTL_OP_exp, ADD(rl, self)))));
    }
    PtlTensorImpl *la = f1(sc, PTL_OP_log, f1(sc, PTL_OP_abs, gi[0]));
    PtlTensorImpl *pos = lcse_part(sc, gi[0], la, self, res, d, 1.0);
    PtlTensorImpl *neg = lcse_part(sc, gi[0], la, self, res, d, -1.0);
    return scope_end(sc, give(n, go, 0, SUB(pos, neg)));
}
