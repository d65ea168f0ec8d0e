/* derivatives/scatter_gather.c -- derivative formulas of the ops of
 * aten/native/scatter_gather.c: gather, scatter, scatter_add, scatter_reduce.  Mirrors their
 * rows of tools/autograd/derivatives.yaml and their helpers in FunctionsManual.cpp
 * (scatter_reduce_backward operation for operation, so gradients agree with PyTorch's bit
 * for bit, ties and zeros included). */
#include "../formula.h"

/* g.gather(dim, index), new ref or NULL */
static PtlTensorImpl *
gather_of(PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *index)
{
    PtlIValue a[3] = {ptl_iv_tensor(g), n->args[1], ptl_iv_tensor(index)};
    return callv(PTL_OP_gather, 3, a);
}

/* gather(self, dim, index): self gets zeros.scatter_add(dim, index, g) */
int
gather_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return give_accumulated_at_index(n, gi, go, PTL_OP_scatter_add);
}

/* scatter(self, dim, index, src|value): self gets g with the written positions zeroed,
 * a tensor src gets g.gather(dim, index) */
int
scatter_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *index = NULL;
    int rc = -1;
    if (saved(n, 0, &index) < 0) {
        goto done;
    }
    if (NEEDS(0)) {
        PtlIValue a[4] = {ptl_iv_tensor(gi[0]), n->args[1], ptl_iv_tensor(index), ptl_iv_int(0)};
        if (put(n, go, 0, callv(PTL_OP_scatter_value, 4, a)) < 0) {
            goto done;
        }
    }
    if (n->num_next > 2 && NEEDS(2) && put(n, go, 2, gather_of(n, gi[0], index)) < 0) {
        goto done;
    }
    rc = 0;
done:
    ptl_xdecref(index);
    return rc;
}

/* scatter_add(self, dim, index, src): self gets g, src gets g.gather(dim, index) */
int
scatter_add_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    PtlTensorImpl *index = NULL;
    int rc = -1;
    if (NEEDS(0) && put_same(n, go, 0, gi[0]) < 0) {
        return -1;
    }
    if (!NEEDS(2)) {
        return 0;
    }
    if (saved(n, 0, &index) == 0) {
        rc = put(n, go, 2, gather_of(n, gi[0], index));
    }
    ptl_xdecref(index);
    return rc;
}

/* temporaries live in a Scope (Note [Formula scope] in formula.h) */

/* a <op> v for a Python-style number v (comparisons with a number) */
static PtlTensorImpl *
t_num(Scope *tp, PtlOpId id, PtlTensorImpl *a, double v)
{
    PtlTensorImpl *w = a ? own(tp, ptl_wrapped_double(v)) : NULL;
    return f2(tp, id, a, w);
}

/* a.masked_fill(mask, v) */
static PtlTensorImpl *
t_fill(Scope *tp, PtlTensorImpl *a, PtlTensorImpl *mask, double v)
{
    PtlIValue s[3] = {ptl_iv_tensor(a), ptl_iv_tensor(mask), ptl_iv_double(v)};
    return a && mask ? own(tp, callv(PTL_OP_masked_fill_Scalar, 3, s)) : NULL;
}

/* a.to(dtype) */
static PtlTensorImpl *
t_to(Scope *tp, PtlTensorImpl *a, PtlDtype dt)
{
    PtlIValue s[2] = {ptl_iv_tensor(a), ptl_iv_dtype(dt)};
    return a ? own(tp, callv(PTL_OP__to_copy, 2, s)) : NULL;
}

/* a.gather(dim, index) */
static PtlTensorImpl *
t_gather(Scope *tp, PtlNode *n, PtlTensorImpl *a, PtlTensorImpl *index)
{
    PtlIValue s[3] = {ptl_iv_tensor(a), n->args[1], ptl_iv_tensor(index)};
    return a && index ? own(tp, callv(PTL_OP_gather, 3, s)) : NULL;
}

/* a.scatter_add(dim, index, b) */
static PtlTensorImpl *
t_scatter_add(Scope *tp, PtlNode *n, PtlTensorImpl *a, PtlTensorImpl *index, PtlTensorImpl *b)
{
    PtlIValue s[4] = {ptl_iv_tensor(a), n->args[1], ptl_iv_tensor(index), ptl_iv_tensor(b)};
    return a && index && b ? own(tp, callv(PTL_OP_scatter_add, 4, s)) : NULL;
}

/* a.scatter_reduce(dim, index, b, "prod", include_self) */
static PtlTensorImpl *
t_scatter_prod(Scope *tp, PtlNode *n, PtlTensorImpl *a, PtlTensorImpl *index, PtlTensorImpl *b)
{
    PtlIValue s[6] = {ptl_iv_tensor(a), n->args[1], ptl_iv_tensor(index), ptl_iv_tensor(b),
                      ptl_iv_string("prod"), n->args[5]};
    return a && index && b ? own(tp, callv(PTL_OP_scatter_reduce_two, 6, s)) : NULL;
}

/* ---- PyTorch's DelayedError: a gradient whose own backward raises ---- */

static int
double_backward_error(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)n;
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_RUNTIME, "scatter_reduce(): Double backward is unsupported for "
                         "src when >1 zeros in src are scattered to the same position in self");
}

static const PtlNodeKind double_backward_error_kind = {.name = "Error",
                                                        .apply = double_backward_error};

/* g (borrowed) as a tensor whose grad_fn, an "Error" node, raises when a double backward
 * reaches it; g itself when it has no history (create_graph off).  New ref or NULL. */
static PtlTensorImpl *
delayed_error(PtlTensorImpl *g)
{
    PtlTensorImpl *out;
    PtlNode *node;
    if (!ptl_requires_grad(g)) {
        ptl_incref(g);
        return g;
    }
    if ((node = ptl_node_new(&double_backward_error_kind, 1, 1)) == NULL) {
        return NULL;
    }
    if ((out = ptl_tensor_impl_alias(g)) == NULL) {
        ptl_node_decref(node);
        return NULL;
    }
    node->next[0] = ptl_gradient_edge(g);
    node->needs = 1u;
    node->input_meta[0].dtype = g->dtype;
    node->input_meta[0].device = g->device;
    node->input_meta[0].dim = g->dim;
    memcpy(node->input_meta[0].sizes, g->sizes, sizeof(int64_t) * (size_t)g->dim);
    ptl_set_grad_fn(out, node, 0);
    ptl_node_decref(node);
    return out;
}

/* ---- scatter_reduce ---- */

/* t, or its conjugate when cplx (NULL stays NULL) */
static PtlTensorImpl *
conj_if(Scope *tp, int cplx, PtlTensorImpl *t)
{
    return cplx ? f1(tp, PTL_OP_conj_physical, t) : t;
}

/* prod.  Elements equal to zero get the product of the others, computed with the zeros
 * masked to one: self through masked_self_result, a lone zero of src (the only zero sent to
 * its slot) through masked_src_result.  src slots with two or more zeros get zero, and a
 * double backward through them raises.  Complex: g times the conjugate of the others'
 * product, as every product's gradient (PyTorch 2.13 leaves it unconjugated, which fails
 * gradcheck; only the in-place scatter_reduce_ records a complex node). */
static int
prod_grads(Scope *tp, PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *self, PtlTensorImpl *index,
           PtlTensorImpl *src, PtlTensorImpl *result, PtlTensorImpl **gself,
           PtlTensorImpl **gsrc)
{
    int cplx = ptl_dtype_is_complex(self->dtype);
    if (NEEDS(0)) {
        PtlTensorImpl *masked_self = t_fill(tp, self, t_num(tp, PTL_OP_eq_Tensor, self, 0.0), 1.0);
        PtlTensorImpl *masked_self_result = t_scatter_prod(tp, n, masked_self, index, src);
        *gself = cplx ? f2(tp, PTL_OP_mul_Tensor, g,
                           f1(tp, PTL_OP_conj_physical,
                              f2(tp, PTL_OP_div_Tensor, masked_self_result, masked_self)))
                      : f2(tp, PTL_OP_div_Tensor, f2(tp, PTL_OP_mul_Tensor, g, masked_self_result),
                           masked_self);
        if (*gself == NULL) {
            return -1;
        }
    }
    if (NEEDS(2)) {
        PtlTensorImpl *src_zero = t_num(tp, PTL_OP_eq_Tensor, src, 0.0);
        PtlTensorImpl *zeros = f1(tp, PTL_OP_zeros_like, self);
        PtlTensorImpl *src_num_zeros = t_gather(
            tp, n, t_scatter_add(tp, n, zeros, index, t_to(tp, src_zero, self->dtype)), index);
        PtlTensorImpl *src_single_zero = f2(tp, PTL_OP_bitwise_and_Tensor, src_zero,
                                            t_num(tp, PTL_OP_eq_Tensor, src_num_zeros, 1.0));
        PtlTensorImpl *masked_src = t_fill(tp, src, src_single_zero, 1.0);
        PtlTensorImpl *masked_src_result = t_scatter_prod(tp, n, self, index, masked_src);
        PtlTensorImpl *lone = t_gather(tp, n, f2(tp, PTL_OP_mul_Tensor, g, conj_if(
                                           tp, cplx, masked_src_result)), index);
        PtlTensorImpl *rest = f2(tp, PTL_OP_div_Tensor,
                                 t_gather(tp, n, f2(tp, PTL_OP_mul_Tensor, g,
                                                    conj_if(tp, cplx, result)), index),
                                 conj_if(tp, cplx, t_fill(tp, src, src_zero, 1.0)));
        PtlIValue w[3] = {ptl_iv_tensor(src_single_zero), ptl_iv_tensor(lone),
                          ptl_iv_tensor(rest)};
        PtlTensorImpl *grad_src = lone && rest ? own(tp, callv(PTL_OP_where_self, 3, w)) : NULL;
        /* the counts of a complex self are complex: compared by their real parts */
        PtlTensorImpl *counts = src_num_zeros != NULL && ptl_dtype_is_complex(self->dtype)
                                    ? f1(tp, PTL_OP_real, src_num_zeros)
                                    : src_num_zeros;
        PtlTensorImpl *many = f1(tp, PTL_OP_any, t_num(tp, PTL_OP_gt_Tensor, counts, 1.0));
        if (grad_src == NULL || many == NULL) {
            return -1;
        }
        *gsrc = ptl_item_readable(many) && ptl_item_double(many) != 0.0
                    ? own(tp, delayed_error(grad_src))
                    : grad_src;
        if (*gsrc == NULL) {
            return -1;
        }
    }
    return 0;
}

/* scatter_reduce(self, dim, index, src, reduce, include_self):
 *   sum:  g, g.gather(dim, index)
 *   prod: see prod_grads
 *   mean: g / N, g.gather(dim, index) / N.gather(dim, index) with N the count of values
 *         reduced into each slot (self counted when included; empty slots count one)
 *   amax / amin: g split evenly among every self and src element equal to the result
 * and with include_self=False the slots that received values pass nothing to self.  The
 * tie count of amax / amin includes self even then, as PyTorch's does. */
int
scatter_reduce_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *tp = &scope;
    PtlTensorImpl *self, *index, *src, *result, *g = gi[0], *gself = NULL, *gsrc = NULL;
    const char *reduce = n->args[4].u.s;
    int include_self = n->args[5].u.b;
    if (saved(n, 0, &self) < 0 || own(tp, self) == NULL || saved(n, 1, &index) < 0 ||
        own(tp, index) == NULL || saved(n, 2, &src) < 0 || own(tp, src) == NULL ||
        saved(n, 3, &result) < 0 || own(tp, result) == NULL) {
        return scope_end(tp, -1);
    }
    if (strcmp(reduce, "sum") == 0) {
        gself = g;
        gsrc = NEEDS(2) ? t_gather(tp, n, g, index) : NULL;
    }
    else if (strcmp(reduce, "prod") == 0) {
        if (prod_grads(tp, n, g, self, index, src, result, &gself, &gsrc) < 0) {
            return scope_end(tp, -1);
        }
    }
    else if (strcmp(reduce, "mean") == 0) {
        PtlTensorImpl *base = f1(tp, include_self ? PTL_OP_ones_like : PTL_OP_zeros_like, g);
        PtlTensorImpl *count = t_scatter_add(tp, n, base, index, f1(tp, PTL_OP_ones_like, src));
        count = t_fill(tp, count, t_num(tp, PTL_OP_eq_Tensor, count, 0.0), 1.0);
        gself = f2(tp, PTL_OP_div_Tensor, g, count);
        if (NEEDS(2)) {
            gsrc = f2(tp, PTL_OP_div_Tensor, t_gather(tp, n, g, index),
                      t_gather(tp, n, count, index));
        }
    }
    else {
        PtlTensorImpl *value = t_gather(tp, n, result, index);
        PtlTensorImpl *self_is = t_to(tp, f2(tp, PTL_OP_eq_Tensor, self, result), self->dtype);
        PtlTensorImpl *src_is = t_to(tp, f2(tp, PTL_OP_eq_Tensor, src, value), self->dtype);
        PtlTensorImpl *shared = f2(tp, PTL_OP_div_Tensor, g,
                                   t_scatter_add(tp, n, self_is, index, src_is));
        gself = f2(tp, PTL_OP_mul_Tensor, self_is, shared);
        if (NEEDS(2)) {
            gsrc = f2(tp, PTL_OP_mul_Tensor, src_is, t_gather(tp, n, shared, index));
        }
    }
    if (NEEDS(0) && !include_self) {
        PtlIValue s[4] = {ptl_iv_tensor(gself), n->args[1], ptl_iv_tensor(index), ptl_iv_int(0)};
        gself = gself ? own(tp, callv(PTL_OP_scatter_value, 4, s)) : NULL;
    }
    if ((NEEDS(0) && gself == NULL) || (NEEDS(2) && gsrc == NULL)) {
        return scope_end(tp, -1);
    }
    if (NEEDS(0) && put_same(n, go, 0, gself) < 0) {
        return scope_end(tp, -1);
    }
    if (NEEDS(2) && put_same(n, go, 2, gsrc) < 0) {
        return scope_end(tp, -1);
    }
    return scope_end(tp, 0);
}

/* scatter(self, dim, index, src|value, reduce=): PyTorch records a node that refuses
 * backward ("derivative for aten::scatter is not implemented") */
int
scatter_legacy_reduce_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_RUNTIME, "derivative for %s is not implemented",
                         n->op->schema.name);
}
