/* formula.h -- helpers for writing derivative formulas.  Every helper calls ops through the
 * dispatcher, so formulas stay differentiable (create_graph=True).  The formulas live in
 * derivatives/<family>.c, one file per src/aten/native/<family>.c (the file that holds the
 * ops' forward kernels), first and second derivatives together; derivatives.h declares
 * them for the table from derivatives.def. */
#ifndef PTL_AUTOGRAD_FORMULA_H
#define PTL_AUTOGRAD_FORMULA_H

#include <string.h>

#include "../aten/native/native.h"
#include "../aten/tensor_iterator.h"
#include "../c10/error.h"
#include "derivatives.h"

/* next edge I wants a gradient.  n->needs has one bit per edge below 31; bit 31 stands for
 * every edge from 31 on (an unwanted gradient there is simply dropped by the engine).  The
 * bits, not the edges, are read because CopySlices runs a node whose edges it has taken. */
#define NEEDS(I) ((n->needs >> ((I) < 31 ? (I) : 31)) & 1u)

/* st = the first `k` arguments given, then the defaults of the rest of op's schema */
static inline void
fill_args(const PtlOperator *op, int k, const PtlIValue *given, PtlIValue *st)
{
    memcpy(st, given, sizeof(PtlIValue) * (size_t)k);
    for (int i = k; i < op->schema.nargs; i++) {
        st[i] = op->schema.args[i].def;
    }
}

/* Calls op `id` with the first `k` arguments given, the rest defaulted.  New ref or NULL. */
static inline PtlTensorImpl *
callv(PtlOpId id, int k, const PtlIValue *given)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    fill_args(ptl_op(id), k, given, st);
    return ptl_call_tensor(id, st);
}

static inline PtlTensorImpl *
op1(PtlOpId id, PtlTensorImpl *a)
{
    PtlIValue v[1] = {ptl_iv_tensor(a)};
    return callv(id, 1, v);
}

static inline PtlTensorImpl *
op2(PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return callv(id, 2, v);
}

/* a * v for a Python-style number v (a wrapped 0-dim tensor keeps a's dtype). */
static inline PtlTensorImpl *
mul_num(PtlTensorImpl *a, double v)
{
    PtlTensorImpl *w = ptl_wrapped_double(v), *r;
    if (w == NULL) {
        return NULL;
    }
    r = op2(PTL_OP_mul_Tensor, a, w);
    ptl_decref(w);
    return r;
}

/* a * conj(v) for a Scalar argument v, as PyTorch's formulas scale by alpha.conj() (Note
 * [Complex Scalars] in aten/ivalue.h); a real v is mul_num's number. */
static inline PtlTensorImpl *
mul_scalar_conj(PtlTensorImpl *a, const PtlIValue *v)
{
    if (v->tag != PTL_IV_COMPLEX) {
        return mul_num(a, ptl_iv_to_double(v));
    }
    PtlTensorImpl *w = ptl_wrapped_complex(v->u.z.re, -v->u.z.im), *r;
    if (w == NULL) {
        return NULL;
    }
    r = op2(PTL_OP_mul_Tensor, a, w);
    ptl_decref(w);
    return r;
}

/* Whether the Scalar argument v is 1 (a formula's factor it can skip). */
static inline int
scalar_is_one(const PtlIValue *v)
{
    return ptl_iv_to_double(v) == 1.0 && ptl_iv_imag(v) == 0.0;
}

/* Calls op `id` with the first `k` arguments given, the rest defaulted, and collects its
 * first `nret` returns into out (new refs; undefined returns stay NULL); later returns are
 * released.  The one helper for an op with several returns.  0 or -1. */
static inline int
call_multi(PtlOpId id, int k, const PtlIValue *given, int nret, PtlTensorImpl **out)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    const PtlOperator *op = ptl_op(id);
    fill_args(op, k, given, st);
    if (ptl_dispatcher_call(op, st) < 0) {
        return -1;
    }
    for (int i = 0; i < nret; i++) {
        out[i] = st[i].tag == PTL_IV_TENSOR ? st[i].u.t : NULL;
    }
    for (int i = nret; i < op->schema.nrets; i++) {
        ptl_ivalue_release(&st[i]);
    }
    return 0;
}

/* The gradient g (borrowed) reduced to input i's shape, dtype and device (new ref). */
static inline PtlTensorImpl *
finish(PtlNode *n, int i, PtlTensorImpl *g)
{
    const PtlInputMeta *m = &n->input_meta[i];
    PtlTensorImpl *r = g;
    ptl_incref(r);
    if (g->dim != m->dim || memcmp(g->sizes, m->sizes, sizeof(int64_t) * (size_t)m->dim) != 0) {
        int64_t dims[PTL_MAX_DIMS];
        int nd = 0, lead = g->dim - m->dim;
        for (int d = 0; d < g->dim; d++) {
            if (d < lead || (m->sizes[d - lead] == 1 && g->sizes[d] != 1)) {
                dims[nd++] = d;
            }
        }
        PtlIValue a[3] = {ptl_iv_tensor(r), ptl_iv_intlist(dims, nd), ptl_iv_bool(1)};
        PtlTensorImpl *s = nd ? callv(PTL_OP_sum_dim_IntList, 3, a) : (ptl_incref(r), r);
        ptl_decref(r);
        if (s == NULL) {
            return NULL;
        }
        PtlIValue b[2] = {ptl_iv_tensor(s), ptl_iv_intlist(m->sizes, m->dim)};
        r = callv(PTL_OP_reshape, 2, b);
        ptl_decref(s);
        if (r == NULL) {
            return NULL;
        }
    }
    if (ptl_dtype_is_complex(r->dtype) && !ptl_dtype_is_complex(m->dtype)) {
        /* a real input of a complex computation: its gradient is the real part
         * (PyTorch's handle_r_to_c; Note [Complex autograd] in derivatives/complex.c) */
        PtlTensorImpl *re = op1(PTL_OP_real, r);
        ptl_decref(r);
        if ((r = re) == NULL) {
            return NULL;
        }
    }
    if (r->dtype != m->dtype || !ptl_device_equal(r->device, m->device)) {
        /* a cast's or a move's gradient goes back to the input's dtype and device
         * (derivatives.yaml's _to_copy_backward(grad, self.options())) */
        PtlTensorImpl *cast = ptl_to_copy(r, m->dtype, &m->device);
        ptl_decref(r);
        r = cast;
    }
    return r;
}

/* Sets grads_out[i] = finish(g) and consumes g (new ref); -1 on failure. */
static inline int
put(PtlNode *n, PtlTensorImpl **out, int i, PtlTensorImpl *g)
{
    if (g == NULL) {
        return -1;
    }
    out[i] = finish(n, i, g);
    ptl_decref(g);
    return out[i] ? 0 : -1;
}

static inline int
put_same(PtlNode *n, PtlTensorImpl **out, int i, PtlTensorImpl *g)
{
    ptl_incref(g);
    return put(n, out, i, g);
}

/* Unpacks saved slot k into *t (new ref).  -1 when unpacking failed. */
static inline int
saved(PtlNode *n, int k, PtlTensorImpl **t)
{
    int err;
    *t = ptl_saved_unpack(n, k, &err);
    return err ? -1 : 0;
}

/* Note [Formula scope]
 * ~~~~~~~~~~~~~~~~~~~~~
 * Formulas make many temporaries.  A Scope owns them: every helper takes the
 * scope, returns a pointer the scope owns (borrowed by the caller), and returns NULL without
 * calling anything when one of its tensor arguments is NULL.  A chain of calls therefore
 * needs one NULL check at its end (give() does it), and scope_end() releases everything.
 * The first failing call has set the error; nothing later overwrites it.  The capital
 * macros (MUL, WHERE, ...) expect the scope in a local named `sc`. */

#define SCOPE_MAX 96

typedef struct Scope {
    PtlTensorImpl *t[SCOPE_MAX];
    int n;
} Scope;

static inline PtlTensorImpl *
own(Scope *sc, PtlTensorImpl *t)
{
    if (t == NULL) {
        return NULL;
    }
    if (sc->n == SCOPE_MAX) {
        ptl_decref(t);
        ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: too many temporaries");
        return NULL;
    }
    sc->t[sc->n++] = t;
    return t;
}

/* Releases the scope's tensors and passes rc through. */
static inline int
scope_end(Scope *sc, int rc)
{
    for (int i = 0; i < sc->n; i++) {
        ptl_decref(sc->t[i]);
    }
    sc->n = 0;
    return rc;
}

static inline PtlTensorImpl *
f1(Scope *sc, PtlOpId id, PtlTensorImpl *a)
{
    return a ? own(sc, op1(id, a)) : NULL;
}

static inline PtlTensorImpl *
f2(Scope *sc, PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    return a && b ? own(sc, op2(id, a, b)) : NULL;
}

static inline PtlTensorImpl *
f3(Scope *sc, PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b, PtlTensorImpl *c)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_tensor(b), ptl_iv_tensor(c)};
    return a && b && c ? own(sc, callv(id, 3, v)) : NULL;
}

/* op `id` on v[0..k) whose v[0] is a tensor (NULL when that tensor is missing) */
static inline PtlTensorImpl *
fv(Scope *sc, PtlOpId id, int k, const PtlIValue *v)
{
    return v[0].tag == PTL_IV_TENSOR && v[0].u.t != NULL ? own(sc, callv(id, k, v)) : NULL;
}

/* ---- shorthands for formulas that use a Scope named sc ---- */

/* a Python-style number (a wrapped 0-dim tensor that takes the other operand's dtype) */
static inline PtlTensorImpl *
num(Scope *sc, double v)
{
    return own(sc, ptl_wrapped_double(v));
}

#define MUL(A, B) f2(sc, PTL_OP_mul_Tensor, (A), (B))
#define DIV(A, B) f2(sc, PTL_OP_div_Tensor, (A), (B))
#define ADD(A, B) f2(sc, PTL_OP_add_Tensor, (A), (B))
#define SUB(A, B) f2(sc, PTL_OP_sub_Tensor, (A), (B))
#define NEG(A) f1(sc, PTL_OP_neg, (A))
#define EQ(A, B) f2(sc, PTL_OP_eq_Tensor, (A), (B))
#define GT(A, B) f2(sc, PTL_OP_gt_Tensor, (A), (B))
#define GE(A, B) f2(sc, PTL_OP_ge_Tensor, (A), (B))
#define LT(A, B) f2(sc, PTL_OP_lt_Tensor, (A), (B))
#define LE(A, B) f2(sc, PTL_OP_le_Tensor, (A), (B))
#define AND(A, B) f2(sc, PTL_OP_logical_and, (A), (B))
#define OR(A, B) f2(sc, PTL_OP_logical_or, (A), (B))
#define NOT(A) f1(sc, PTL_OP_logical_not, (A))
#define WHERE(C, A, B) f3(sc, PTL_OP_where_self, (C), (A), (B))
#define MULN(A, V) MUL((A), num(sc, (V)))

/* a * conj(v), v a Scalar argument (mul_scalar_conj); a itself when v is 1 */
static inline PtlTensorImpl *
muls(Scope *sc, PtlTensorImpl *a, const PtlIValue *v)
{
    return a == NULL || scalar_is_one(v) ? a : own(sc, mul_scalar_conj(a, v));
}
#define MULS(A, V) muls(sc, (A), (V))

/* conj(a) for a complex a, a itself for a real one: the factor PyTorch's formulas conjugate
 * (Note [Complex autograd] in derivatives/complex.c) */
static inline PtlTensorImpl *
conj_of(Scope *sc, PtlTensorImpl *a)
{
    return a != NULL && ptl_dtype_is_complex(a->dtype) ? f1(sc, PTL_OP_conj_physical, a) : a;
}
#define CONJ(A) conj_of(sc, (A))

/* grads_out[i] = finish(g); g is borrowed (the scope owns it).  -1 when g is NULL. */
static inline int
give(PtlNode *n, PtlTensorImpl **go, int i, PtlTensorImpl *g)
{
    if (g == NULL) {
        return -1;
    }
    go[i] = finish(n, i, g);
    return go[i] ? 0 : -1;
}

/* ---- helpers that formulas of several families share ---- */
/* a Python-style integer (a wrapped 0-dim tensor) */
static inline PtlTensorImpl *
inum(Scope *sc, int64_t v)
{
    return own(sc, ptl_wrapped_int(v));
}

/* sign(x), and for a complex x sgn(x) = x / |x| (0 at 0; Note [Complex autograd]) */
static inline PtlTensorImpl *
sign_or_sgn(Scope *sc, PtlTensorImpl *x)
{
    if (x == NULL || !ptl_dtype_is_complex(x->dtype)) {
        return f1(sc, PTL_OP_sign, x);
    }
    PtlTensorImpl *a = f1(sc, PTL_OP_abs, x);
    return DIV(x, ADD(a, EQ(a, inum(sc, 0))));
}

/* saved slot k (must be defined) */
static inline PtlTensorImpl *
sv(Scope *sc, PtlNode *n, int k)
{
    PtlTensorImpl *t;
    if (saved(n, k, &t) < 0) {
        return NULL;
    }
    if (t == NULL) {
        ptl_error_set(PTL_ERR_RUNTIME, "derivative formula: saved tensor %d is undefined", k);
        return NULL;
    }
    return own(sc, t);
}

/* zeros_like(like) */
static inline PtlTensorImpl *
zeros_of(Scope *sc, PtlTensorImpl *like)
{
    return f1(sc, PTL_OP_zeros_like, like);
}

/* zeros of the given sizes in dtype dt */
static inline PtlTensorImpl *
zeros_sized(Scope *sc, const int64_t *sizes, int dim, PtlDtype dt)
{
    PtlIValue v[2] = {ptl_iv_intlist(sizes, dim), ptl_iv_dtype(dt)};
    return own(sc, callv(PTL_OP_zeros, 2, v));
}

/* zeros of input i's shape in dtype dt */
static inline PtlTensorImpl *
zeros_input(Scope *sc, PtlNode *n, int i, PtlDtype dt)
{
    return zeros_sized(sc, n->input_meta[i].sizes, n->input_meta[i].dim, dt);
}

/* a.reshape(sizes) */
static inline PtlTensorImpl *
reshape_to(Scope *sc, PtlTensorImpl *a, const int64_t *sizes, int dim)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_intlist(sizes, dim)};
    return fv(sc, PTL_OP_reshape, 2, v);
}

/* a with its last two dims swapped (a.mT) */
static inline PtlTensorImpl *
transpose_last(Scope *sc, PtlTensorImpl *a)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_int(-2), ptl_iv_int(-1)};
    return fv(sc, PTL_OP_transpose_int, 3, v);
}

/* a.unsqueeze(d) */
static inline PtlTensorImpl *
unsq(Scope *sc, PtlTensorImpl *a, int64_t d)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_int(d)};
    return fv(sc, PTL_OP_unsqueeze, 2, v);
}

#define MATMUL(A, B) f2(sc, PTL_OP_matmul, (A), (B))
#define MT(A) transpose_last(sc, (A))
/* a.mH: the conjugate transpose of a complex a, a.mT of a real one (the same tensor op) */
#define MH(A) conj_of(sc, transpose_last(sc, (A)))

/* the matrix diagonals of x as a [*, n] tensor */
static inline PtlTensorImpl *
diag_of(Scope *sc, PtlTensorImpl *x)
{
    PtlIValue v[4] = {ptl_iv_tensor(x), ptl_iv_int(0), ptl_iv_int(-2), ptl_iv_int(-1)};
    return fv(sc, PTL_OP_diagonal, 4, v);
}

/* PyTorch's check that a loss does not depend on the phases of complex eigen- or singular
 * vectors, which the factorisations leave arbitrary: allclose(a, -b, rtol=1e-2, atol=1e-2),
 * i.e. |a + b| <= 1e-2 + 1e-2 |b| everywhere (b NULL: |a| <= 1e-2), a and b the imaginary
 * parts of diag(X^H gX) of the vectors X; RuntimeError `msg` when it fails.  0 or -1. */
static inline int
check_phase_free(Scope *sc, PtlTensorImpl *a, PtlTensorImpl *b, const char *msg)
{
    PtlTensorImpl *gap = b != NULL ? f1(sc, PTL_OP_abs, ADD(a, b)) : f1(sc, PTL_OP_abs, a);
    PtlTensorImpl *tol = b != NULL ? ADD(MULN(f1(sc, PTL_OP_abs, b), 1e-2), num(sc, 1e-2))
                                   : num(sc, 1e-2);
    PtlTensorImpl *ok = f1(sc, PTL_OP_all, LE(gap, tol));
    if (ok == NULL) {
        return -1;
    }
    if (ptl_item_readable(ok) && ptl_item_double(ok) == 0.0) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s", msg);
    }
    return 0;
}

/* linalg_solve(A, B, left=left) */
static inline PtlTensorImpl *
solve(Scope *sc, PtlTensorImpl *A, PtlTensorImpl *B, int left)
{
    PtlIValue v[3] = {ptl_iv_tensor(A), ptl_iv_tensor(B), ptl_iv_bool(left)};
    return A && B ? own(sc, callv(PTL_OP_linalg_solve, 3, v)) : NULL;
}

/* x.narrow(dim, start, len) */
static inline PtlTensorImpl *
block(Scope *sc, PtlTensorImpl *x, int64_t dim, int64_t start, int64_t len)
{
    PtlIValue v[4] = {ptl_iv_tensor(x), ptl_iv_int(dim), ptl_iv_int(start), ptl_iv_int(len)};
    return fv(sc, PTL_OP_narrow, 4, v);
}

/* cat([a, b], dim) */
static inline PtlTensorImpl *
cat2(Scope *sc, PtlTensorImpl *a, PtlTensorImpl *b, int64_t dim)
{
    PtlTensorImpl *ab[2] = {a, b};
    PtlIValue v[2] = {ptl_iv_tensorlist(ab, 2), ptl_iv_int(dim)};
    return a && b ? own(sc, callv(PTL_OP_cat, 2, v)) : NULL;
}

/* Zeros of input i's shape in dtype dt, a constant without history.  New ref or NULL. */
static inline PtlTensorImpl *
input_zeros(PtlNode *n, int i, PtlDtype dt)
{
    const PtlInputMeta *m = &n->input_meta[i];
    PtlIValue zero = ptl_iv_int(0);
    PtlTensorImpl *z = ptl_empty(m->dim, m->sizes, dt, m->device);
    if (z != NULL && ptl_fill_scalar(z, &zero) < 0) {
        PTL_CLEAR(z);
    }
    return z;
}

/* Self's gradient for op(self, dim, index) that reads self at index (index_select,
 * gather): g accumulated into zeros of self's shape by op `accumulate` (index_add,
 * scatter_add) with the same dim and index (saved slot 0).  0 or -1. */
static inline int
give_accumulated_at_index(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go,
                          PtlOpId accumulate)
{
    PtlTensorImpl *index = NULL, *z = NULL;
    int rc = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    if (saved(n, 0, &index) == 0 && (z = input_zeros(n, 0, gi[0]->dtype)) != NULL) {
        PtlIValue a[4] = {ptl_iv_tensor(z), n->args[1], ptl_iv_tensor(index), ptl_iv_tensor(gi[0])};
        rc = put(n, go, 0, callv(accumulate, 4, a));
    }
    ptl_xdecref(z);
    ptl_xdecref(index);
    return rc;
}

/* Builds the stack [grad, tensors[0..nt), node args at positions from[0..na)] and calls
 * op `id`; its first return goes to input `slot` of the node.  0 or -1. */
static inline int
call_into(PtlNode *n, PtlTensorImpl **go, int slot, PtlOpId id, PtlTensorImpl *g,
          PtlTensorImpl **tensors, int nt, const int *from, int na)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    int k = 0;
    a[k++] = ptl_iv_tensor(g);
    for (int i = 0; i < nt; i++) {
        a[k++] = ptl_iv_tensor(tensors[i]);
    }
    for (int i = 0; i < na; i++) {
        a[k++] = n->args[from[i]];
    }
    return put(n, go, slot, callv(id, k, a));
}

/* a + v and v - a for a number v */
#define ADDN(A, V) ADD((A), num(sc, (V)))
#define RSUBN(V, A) ADDN(NEG(A), (V))

/* saved slot k; an undefined tensor (an absent optional one) is NULL without an error */
static inline int
sv_opt(Scope *sc, PtlNode *n, int k, PtlTensorImpl **t)
{
    if (saved(n, k, t) < 0) {
        return -1;
    }
    if (*t != NULL && own(sc, *t) == NULL) {
        *t = NULL;
        return -1;
    }
    return 0;
}

/* zeros for edge i when it needs a gradient (PyTorch's zeros_like(grad)), else nothing */
static inline int
give_zeros(Scope *sc, PtlNode *n, PtlTensorImpl **go, int i, PtlTensorImpl *like)
{
    return NEEDS(i) ? give(n, go, i, f1(sc, PTL_OP_zeros_like, like)) : 0;
}

/* the node's own op again with grad_output replaced by g and the tensor argument at
 * self_pos by self: [g, args[1..]] */
static inline PtlTensorImpl *
same_op(Scope *sc, PtlNode *n, PtlTensorImpl *g, PtlTensorImpl *self, int self_pos)
{
    PtlIValue a[PTL_SCHEMA_MAX_ARGS];
    a[0] = ptl_iv_tensor(g);
    for (int i = 1; i < n->nargs; i++) {
        a[i] = n->args[i];
    }
    a[self_pos] = ptl_iv_tensor(self);
    return g && self ? fv(sc, n->op->id, n->nargs, a) : NULL;
}

/* ---- normalizations (derivatives/layer_norm.c, derivatives/batch_norm.c) ---- */

/* The dims a normalization reduces over (layer norm: the last k; batch norm: all but 1) and
 * the number of values each statistic covers. */
typedef struct {
    int64_t dims[PTL_MAX_DIMS];
    int k;
    double count;
} NormDims;

/* a * v (NULL passes through) */
static inline PtlTensorImpl *
scaled(Scope *sc, PtlTensorImpl *a, double v)
{
    return a ? own(sc, mul_num(a, v)) : NULL;
}

/* sum of t over the normalized dims, kept as size 1 */
static inline PtlTensorImpl *
norm_sum(Scope *sc, PtlTensorImpl *t, const NormDims *d)
{
    PtlIValue v[3] = {ptl_iv_tensor(t), ptl_iv_intlist(d->dims, d->k), ptl_iv_bool(1)};
    return fv(sc, PTL_OP_sum_dim_IntList, 3, v);
}

static inline PtlTensorImpl *
norm_mean(Scope *sc, PtlTensorImpl *t, const NormDims *d)
{
    return scaled(sc, norm_sum(sc, t, d), 1.0 / d->count);
}

/* The end of a normalization's derivative: r[0..3) are its backward's (gI, gW, gB) (new refs
 * or NULL).  Where mask[0] and gradients of the statistics flow (gmean, grstd, NULL when
 * none; broadcast against x like mean and rstd), gI gains gmean / N - grstd rstd^3 (x - mean)
 * / N; then the results that mask asks for go to go[0..3).  r is released (and cleared)
 * either way.  0 or -1 (derivatives/layer_norm.c). */
int norm_grad_finish(PtlNode *n, PtlTensorImpl **go, Scope *sc, const NormDims *d,
                     PtlTensorImpl *x, PtlTensorImpl *mean, PtlTensorImpl *rstd,
                     PtlTensorImpl *gmean, PtlTensorImpl *grstd, const int64_t *mask,
                     PtlTensorImpl **r);

/* The derivative of a normalization's backward along (ggI, ggW, ggB) (Note [Layer norm double
 * backward], over the dims d; mean, rstd, w, ggW and ggB broadcast against x, w may be NULL):
 * out[0] = d/dg, out[1] = d/dx, out[2] = g r Pi(ggI), the weight's gradient before its
 * reduction to the weight's shape, each computed where want[i] and left NULL where nothing
 * flows (borrowed from the scope).  0 or -1 (derivatives/layer_norm.c). */
int norm_double_backward(Scope *sc, const NormDims *d, PtlTensorImpl *g, PtlTensorImpl *x,
                         PtlTensorImpl *mean, PtlTensorImpl *rstd, PtlTensorImpl *w,
                         PtlTensorImpl *ggi, PtlTensorImpl *ggw, PtlTensorImpl *ggb,
                         const int *want, PtlTensorImpl **out);

#endif
