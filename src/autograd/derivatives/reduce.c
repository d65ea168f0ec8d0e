/* derivatives/reduce.c -- derivative formulas of the reductions of aten/native/reduce.c
 * (sum, mean, prod, amax/amin, max/min, aminmax, var, std, var_mean, std_mean, norm,
 * logsumexp, nansum); linalg_vector_norm shares norm's formula.  Mirrors their rows of
 * tools/autograd/derivatives.yaml and FunctionsManual.cpp. */
#include <math.h>

#include "../formula.h"

static PtlTensorImpl *
expand_to_input(PtlNode *n, PtlTensorImpl *g)
{
    PtlIValue a[2] = {ptl_iv_tensor(g), ptl_iv_intlist(n->input_meta[0].sizes, n->input_meta[0].dim)};
    return callv(PTL_OP_expand, 2, a);
}

int
sum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return NEEDS(0) ? put(n, go, 0, expand_to_input(n, gi[0])) : 0;
}

/* Re-inserts the reduced dims (keepdim=False) so g broadcasts against the input. */
static PtlTensorImpl *
unsqueeze_reduced(PtlNode *n, PtlTensorImpl *g)
{
    const PtlInputMeta *m = &n->input_meta[0];
    int keepdim = n->args[2].tag == PTL_IV_BOOL && n->args[2].u.b;
    int reduced[PTL_MAX_DIMS] = {0};
    if (n->args[1].tag != PTL_IV_INTLIST || n->args[1].u.il.n == 0) {
        for (int d = 0; d < m->dim; d++) {
            reduced[d] = 1;
        }
    }
    else {
        for (int64_t k = 0; k < n->args[1].u.il.n; k++) {
            int64_t d = n->args[1].u.il.data[k];
            reduced[d < 0 ? d + m->dim : d] = 1;
        }
    }
    ptl_incref(g);
    if (keepdim) {
        return g;
    }
    for (int d = 0; d < m->dim; d++) {
        if (!reduced[d]) {
            continue;
        }
        PtlIValue a[2] = {ptl_iv_tensor(g), ptl_iv_int(d)};
        PtlTensorImpl *u = callv(PTL_OP_unsqueeze, 2, a);
        ptl_decref(g);
        if ((g = u) == NULL) {
            return NULL;
        }
    }
    return g;
}

int
sum_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *u = unsqueeze_reduced(n, gi[0]);
    if (u == NULL) {
        return -1;
    }
    int rc = put(n, go, 0, expand_to_input(n, u));
    ptl_decref(u);
    return rc;
}

static int64_t
input_numel(const PtlInputMeta *m)
{
    int64_t k = 1;
    for (int d = 0; d < m->dim; d++) {
        k *= m->sizes[d];
    }
    return k;
}

int
mean_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *s = mul_num(gi[0], 1.0 / (double)input_numel(&n->input_meta[0]));
    if (s == NULL) {
        return -1;
    }
    int rc = put(n, go, 0, expand_to_input(n, s));
    ptl_decref(s);
    return rc;
}

int
mean_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    if (!NEEDS(0)) {
        return 0;
    }
    const PtlInputMeta *m = &n->input_meta[0];
    int64_t count = 1;
    if (n->args[1].tag != PTL_IV_INTLIST || n->args[1].u.il.n == 0) {
        count = input_numel(m);
    }
    else {
        for (int64_t k = 0; k < n->args[1].u.il.n; k++) {
            int64_t d = n->args[1].u.il.data[k];
            count *= m->sizes[d < 0 ? d + m->dim : d];
        }
    }
    PtlTensorImpl *u = unsqueeze_reduced(n, gi[0]), *s;
    if (u == NULL) {
        return -1;
    }
    s = mul_num(u, 1.0 / (double)count);
    ptl_decref(u);
    if (s == NULL) {
        return -1;
    }
    int rc = put(n, go, 0, expand_to_input(n, s));
    ptl_decref(s);
    return rc;
}

static PtlTensorImpl *
expand_to(Scope *sc, PtlTensorImpl *a, const PtlInputMeta *m)
{
    PtlIValue v[2] = {ptl_iv_tensor(a), ptl_iv_intlist(m->sizes, m->dim)};
    return fv(sc, PTL_OP_expand, 2, v);
}

/* ---- reduced dimensions: which input dims a reduction removed ---- */

typedef struct Reduced {
    int mask[PTL_MAX_DIMS];       /* 1: reduced */
    int64_t dims[PTL_MAX_DIMS];   /* the reduced dims, ascending */
    int ndims;
    int64_t count;                /* elements per reduced slice */
    int keepdim;
} Reduced;

/* From a dim argument (int, int[] (empty: all) or None: all) of an input with meta m. */
static void
reduced_from(Reduced *r, const PtlInputMeta *m, const PtlIValue *dim, int keepdim)
{
    memset(r->mask, 0, sizeof(r->mask));
    if (dim->tag == PTL_IV_INT) {
        int64_t d = dim->u.i;
        if (m->dim > 0) {
            r->mask[d < 0 ? d + m->dim : d] = 1;
        }
    }
    else if (dim->tag == PTL_IV_INTLIST && dim->u.il.n > 0) {
        for (int64_t k = 0; k < dim->u.il.n; k++) {
            int64_t d = dim->u.il.data[k];
            if (m->dim > 0) {
                r->mask[d < 0 ? d + m->dim : d] = 1;
            }
        }
    }
    else {
        for (int d = 0; d < m->dim; d++) {
            r->mask[d] = 1;
        }
    }
    r->ndims = 0;
    r->count = 1;
    for (int d = 0; d < m->dim; d++) {
        if (r->mask[d]) {
            r->dims[r->ndims++] = d;
            r->count *= m->sizes[d];
        }
    }
    r->keepdim = keepdim;
}

/* a reduction's output (or its gradient) with the reduced dims put back as size 1 */
static PtlTensorImpl *
keep(Scope *sc, PtlTensorImpl *a, const Reduced *r)
{
    if (a == NULL || r->keepdim) {
        return a;
    }
    for (int k = 0; k < r->ndims; k++) {
        a = unsq(sc, a, r->dims[k]);
    }
    return a;
}

static PtlTensorImpl *
sum_keep(Scope *sc, PtlTensorImpl *a, const Reduced *r)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(r->dims, r->ndims), ptl_iv_bool(1)};
    return r->ndims == 0 ? a : fv(sc, PTL_OP_sum_dim_IntList, 3, v);
}

static PtlTensorImpl *
mean_keep(Scope *sc, PtlTensorImpl *a, const Reduced *r)
{
    PtlIValue v[3] = {ptl_iv_tensor(a), ptl_iv_intlist(r->dims, r->ndims), ptl_iv_bool(1)};
    return r->ndims == 0 ? a : fv(sc, PTL_OP_mean_dim, 3, v);
}

/* 1 where x equals the kept-dim extremum e (NaN matches NaN: a NaN wins max/min) */
static PtlTensorImpl *
hits(Scope *sc, PtlTensorImpl *x, PtlTensorImpl *e)
{
    return OR(EQ(x, e), AND(f1(sc, PTL_OP_isnan, x), f1(sc, PTL_OP_isnan, e)));
}

/* g spread evenly over the elements of x equal to the kept-dim extremum e */
static PtlTensorImpl *
evenly(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *x, PtlTensorImpl *e, const Reduced *r)
{
    PtlTensorImpl *mask = hits(sc, x, e);
    return DIV(MUL(g, mask), sum_keep(sc, mask, r));
}

/* amax/amin(self, dim=[], keepdim), max(), min(): evenly among ties */
int
amax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    int full = n->op->id == PTL_OP_max || n->op->id == PTL_OP_min;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], full ? &(PtlIValue){.tag = PTL_IV_NONE} : &n->args[1],
                 !full && ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *x = sv(sc, n, 0);
    return scope_end(sc, give(n, go, 0, evenly(sc, keep(sc, gi[0], &r), x,
                                               keep(sc, sv(sc, n, 1), &r), &r)));
}

/* max.dim/min.dim(self, dim, keepdim): all of g to the index, the first extremum */
int
max_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0) || gi[0] == NULL) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *mask = hits(sc, sv(sc, n, 0), keep(sc, sv(sc, n, 1), &r));
    PtlTensorImpl *first = mask;
    if (n->input_meta[0].dim > 0) {
        PtlIValue v[2] = {ptl_iv_tensor(mask), ptl_iv_int(r.dims[0])};
        first = AND(mask, EQ(fv(sc, PTL_OP_cumsum, 2, v), inum(sc, 1)));
    }
    return scope_end(sc, give(n, go, 0, WHERE(first, keep(sc, gi[0], &r), inum(sc, 0))));
}

/* aminmax(self, *, dim?, keepdim) -> (min, max): each output's g evenly among its ties */
int
aminmax_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    PtlTensorImpl *x, *total = NULL;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    x = sv(sc, n, 0);
    for (int k = 0; k < 2; k++) {
        if (gi[k] == NULL) {
            continue;
        }
        /* the extremum only picks the mask: computed from a detached x, it records nothing */
        PtlIValue v[3] = {ptl_iv_tensor(f1(sc, PTL_OP_detach, x)), ptl_iv_intlist(r.dims, r.ndims),
                          ptl_iv_bool(1)};
        PtlTensorImpl *e = fv(sc, k == 0 ? PTL_OP_amin : PTL_OP_amax, 3, v);
        PtlTensorImpl *part = evenly(sc, keep(sc, gi[k], &r), x, e, &r);
        total = total ? ADD(total, part) : part;
    }
    return scope_end(sc, give(n, go, 0, total));
}

/* prod of x along `dim` (kept) differentiated: g r / x without zeros; with zeros only a
 * lone zero gets a gradient, the product of the others (PyTorch's prod_backward) */
static PtlTensorImpl *
prod_grad(Scope *sc, PtlTensorImpl *g, PtlTensorImpl *x, PtlTensorImpl *r, int64_t dim)
{
    PtlTensorImpl *zero = inum(sc, 0), *one = inum(sc, 1);
    x = CONJ(x);   /* complex: the conjugated factors (Note [Complex autograd]) */
    r = CONJ(r);
    PtlTensorImpl *z = EQ(x, zero), *any = f1(sc, PTL_OP_any, z);
    if (any == NULL) {
        return NULL;
    }
    if (ptl_item_readable(any) && !ptl_item_double(any)) {
        return MUL(g, DIV(r, x));
    }
    PtlIValue zv[3] = {ptl_iv_tensor(z), ptl_iv_intlist(&dim, 1), ptl_iv_bool(1)};
    PtlTensorImpl *nz = fv(sc, PTL_OP_sum_dim_IntList, 3, zv), *xs = WHERE(z, one, x);
    PtlIValue pv[3] = {ptl_iv_tensor(xs), ptl_iv_int(dim), ptl_iv_bool(1)};
    PtlTensorImpl *ps = fv(sc, PTL_OP_prod_dim_int, 3, pv);
    PtlTensorImpl *others = WHERE(z, WHERE(EQ(nz, one), ps, zero),
                                  WHERE(EQ(nz, zero), DIV(ps, xs), zero));
    return MUL(g, others);
}

int
prod_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    const PtlInputMeta *m = &n->input_meta[0];
    int64_t flat = -1;
    if (!NEEDS(0)) {
        return 0;
    }
    PtlTensorImpl *x = reshape_to(sc, sv(sc, n, 0), &flat, 1);
    PtlTensorImpl *g = prod_grad(sc, reshape_to(sc, gi[0], (int64_t[]){1}, 1), x,
                                 reshape_to(sc, sv(sc, n, 1), (int64_t[]){1}, 1), 0);
    return scope_end(sc, give(n, go, 0, reshape_to(sc, g, m->sizes, m->dim)));
}

int
prod_dim_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0)) {
        return 0;
    }
    if (n->input_meta[0].dim == 0) {
        return give(n, go, 0, gi[0]);
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *g = prod_grad(sc, keep(sc, gi[0], &r), sv(sc, n, 0),
                                 keep(sc, sv(sc, n, 1), &r), r.dims[0]);
    return scope_end(sc, give(n, go, 0, g));
}

/* nansum: g where x is not NaN */
int
nansum_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *ok = NOT(f1(sc, PTL_OP_isnan, sv(sc, n, 0)));
    return scope_end(sc, give(n, go, 0, MUL(keep(sc, gi[0], &r), ok)));
}

/* logsumexp(self, dim, keepdim): g exp(x - r) */
int
logsumexp_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    if (!NEEDS(0)) {
        return 0;
    }
    reduced_from(&r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[2]));
    PtlTensorImpl *e = f1(sc, PTL_OP_exp, SUB(sv(sc, n, 0), keep(sc, sv(sc, n, 1), &r)));
    return scope_end(sc, give(n, go, 0, MUL(keep(sc, gi[0], &r), CONJ(e))));   /* complex */
}

/* The dims, correction and keepdim of var/std/var_mean/std_mean in their three overloads:
 * (self, unbiased), (self, dim?, unbiased, keepdim), (self, dim?, *, correction?, keepdim). */
static double
moments_args(PtlNode *n, Reduced *r)
{
    PtlIValue all = ptl_iv_none();
    double corr;
    switch (n->op->id) {
    case PTL_OP_var:
    case PTL_OP_std:
    case PTL_OP_var_mean:
    case PTL_OP_std_mean:
        reduced_from(r, &n->input_meta[0], &all, 0);
        return ptl_iv_to_int(&n->args[1]) ? 1.0 : 0.0;
    case PTL_OP_var_dim:
    case PTL_OP_std_dim:
    case PTL_OP_var_mean_dim:
    case PTL_OP_std_mean_dim:
        reduced_from(r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[3]));
        return ptl_iv_to_int(&n->args[2]) ? 1.0 : 0.0;
    default:
        reduced_from(r, &n->input_meta[0], &n->args[1], ptl_iv_to_int(&n->args[3]));
        corr = n->args[2].tag == PTL_IV_NONE ? 1.0 : ptl_iv_to_double(&n->args[2]);
        return corr;
    }
}

/* var: 2 g (x - mean) / (N - correction); std: the same with g / (2 std) (0 where std = 0);
 * var_mean/std_mean add g_mean / N.  Outputs without a gradient (NULL) are skipped. */
static int
moments_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go, int is_std, int with_mean)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    PtlTensorImpl *x, *total = NULL;
    if (!NEEDS(0)) {
        return 0;
    }
    double corr = moments_args(n, &r);
    x = sv(sc, n, 0);
    if (gi[0] != NULL) {
        PtlTensorImpl *g = keep(sc, gi[0], &r);
        if (is_std) {
            PtlTensorImpl *s = keep(sc, sv(sc, n, 1), &r), *zero = inum(sc, 0);
            g = WHERE(EQ(s, zero), zero, DIV(g, MULN(s, 2.0)));
        }
        total = MUL(MULN(g, 2.0 / ((double)r.count - corr)), SUB(x, mean_keep(sc, x, &r)));
    }
    if (with_mean && gi[1] != NULL) {
        PtlTensorImpl *part = expand_to(sc, MULN(keep(sc, gi[1], &r), 1.0 / (double)r.count),
                                        &n->input_meta[0]);
        total = total ? ADD(total, part) : part;
    }
    return scope_end(sc, give(n, go, 0, total));
}

int
var_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 0, 0);
}

int
std_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 1, 0);
}

int
var_mean_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 0, 1);
}

int
std_mean_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    return moments_backward(n, gi, go, 1, 1);
}

/* norm(self, p, dims, keepdim) = (sum |x|^p)^(1/p).  p = 0: zeros; p = 1: g sign(x);
 * p = 2: g x / r; p = +-inf: g sign(x) evenly among the |x| equal to r; otherwise
 * g sign(x) |x|^(p-1) / r^(p-1).  Where r = 0 (and, for p < 1, where x = 0) the
 * gradient is 0, as PyTorch. */
int
norm_backward(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    Scope scope = {0}, *sc = &scope;
    Reduced r;
    PtlTensorImpl *x, *nr, *g, *res, *zero;
    double p = n->args[1].tag == PTL_IV_NONE ? 2.0 : ptl_iv_to_double(&n->args[1]);
    if (!NEEDS(0)) {
        return 0;
    }
    if (n->op->id == PTL_OP_norm_Scalar) {
        PtlIValue all = ptl_iv_none();
        reduced_from(&r, &n->input_meta[0], &all, 0);
    }
    else {
        reduced_from(&r, &n->input_meta[0], &n->args[2], ptl_iv_to_int(&n->args[3]));
    }
    x = sv(sc, n, 0);
    nr = keep(sc, sv(sc, n, 1), &r);
    g = keep(sc, gi[0], &r);
    zero = inum(sc, 0);
    PtlTensorImpl *sign = sign_or_sgn(sc, x);
    if (p == 0.0) {
        res = zeros_of(sc, x);
    }
    else if (p == 1.0) {
        res = MUL(g, sign);
    }
    else if (p == 2.0) {
        res = MUL(x, WHERE(EQ(nr, zero), zero, DIV(g, nr)));
    }
    else if (isinf(p)) {
        res = MUL(sign, evenly(sc, g, f1(sc, PTL_OP_abs, x), nr, &r));
    }
    else {
        PtlTensorImpl *pw = f2(sc, PTL_OP_pow_Tensor_Tensor, f1(sc, PTL_OP_abs, x), num(sc, p - 1.0));
        PtlTensorImpl *den = f2(sc, PTL_OP_pow_Tensor_Tensor, nr, num(sc, p - 1.0));
        res = MUL(MUL(sign, pw), WHERE(EQ(nr, zero), zero, DIV(g, den)));
        if (p < 1.0) {
            res = WHERE(EQ(x, zero), zero, res);
        }
    }
    return scope_end(sc, give(n, go, 0, res));
}
