/* einsum.c -- einsum and tensordot.  Mirrors the einsum and tensordot of
 * ATen/native/Linear.cpp.
 *
 * Both are composite (CompositeImplicitAutograd in PyTorch): they only call other ops through
 * the dispatcher (as_strided, permute, reshape, sum, bmm, mm), so autograd differentiates
 * them through those ops and no derivatives.def row is needed.
 *
 * Note [einsum lowering]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * The equation is parsed into one list of labels per operand (the 52 letters; uppercase
 * sort first, as in PyTorch) plus the position of its ellipsis.  Every operand is then
 * viewed in one common "full" layout of D dims: first the output dims (in output order, the
 * ellipsis dims where the output puts them), then the contracted dims (ellipsis dims missing
 * from an explicit output, then the other labels in label order).  A dim the operand lacks
 * has size 1; a label repeated within one operand becomes one dim whose stride is the sum of
 * the strides (the diagonal, through as_strided).
 *
 * The operands are then contracted left to right.  A contracted dim is summed as soon as no
 * later operand has it: in the first operand by sum(keepdim=True), afterwards inside the
 * pairwise product.  The product of two full-layout tensors sorts each dim into batch (both
 * sides larger than 1), left-only, right-only and summed dims, permutes and reshapes both
 * sides to 3-D and calls bmm; a summed dim that only one side has is summed on that side
 * first.  The result keeps size-1 dims for the summed ones, so it stays in the full layout,
 * and a final reshape drops the contracted dims. */
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "native.h"

#define NLABELS 52
#define ELL (-1)            /* the ellipsis in a label list */
#define MAX_TERM 64         /* labels kept per term (a longer one cannot match a tensor) */

static int
is_subscript(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 */
static int
label_of(char c)
{
    return c <= 'Z' ? c - 'A' : c - 'a' + 26;
}

static char
char_of(int label)
{
    return (char)(label < 26 ? 'A' + label : 'a' + label - 26);
}

typedef struct Term {
    int labels[MAX_TERM];   /* ELL marks the ellipsis */
    int n;                  /* entries in labels (the ellipsis counts one) */
    int has_ell;
} Term;

static void
term_push(Term *t, int label)
{
    if (t->n < MAX_TERM) {
        t->labels[t->n] = label;
    }
    t->n++;
}

/* Parses one term of eq[begin..end): letters, spaces and one "..."; `who` is the operand
 * number, or -1 for the output.  0 or -1. */
static int
parse_term(const char *eq, size_t begin, size_t end, int who, Term *t)
{
    for (size_t i = begin; i < end; i++) {
        char c = eq[i];
        if (c == ' ') {
            continue;
        }
        if (c == '.') {
            if (t->has_ell) {
                if (who < 0) {
                    return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): found '.' for output but "
                                         "an ellipsis (...) was already found");
                }
                return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): found '.' for operand %d for "
                                     "which an ellipsis was already found", who);
            }
            if (!(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.')) {
                if (who < 0) {
                    return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): found '.' for output that "
                                         "is not part of any ellipsis (...)");
                }
                return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): found '.' for operand %d that "
                                     "is not part of any ellipsis", who);
            }
            i += 2;
            t->has_ell = 1;
            term_push(t, ELL);
            continue;
        }
        if (!is_subscript(c)) {
            return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): invalid subscript given at index %zu "
                                 "in the equation string, subscripts must be in [a-zA-Z]", i);
        }
        term_push(t, label_of(c));
    }
    return 0;
}

/* The full layout of Note [einsum lowering]. */
typedef struct Layout {
    int D;                      /* dims of the full layout */
    int out_ndims;              /* the first out_ndims are the output's */
    int ell_num;                /* dims the ellipsis covers */
    int ell_pos;                /* full position of the first ellipsis dim */
    int label_pos[NLABELS];     /* full position of each label; -1 when unused */
    int64_t sizes[PTL_MAX_DIMS];
    int last_op[PTL_MAX_DIMS];  /* the last operand having the dim */
} Layout;

/* Sum of t over the dims of mask (keepdim), or a new ref to t when the mask is empty. */
static PtlTensorImpl *
sum_keep(PtlTensorImpl *t, const unsigned char *mask, int D)
{
    int64_t dims[PTL_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < D; d++) {
        if (mask[d] && t->sizes[d] != 1) {
            dims[n++] = d;
        }
    }
    if (n == 0) {
        ptl_incref(t);
        return t;
    }
    PtlIValue args[4] = {ptl_iv_tensor(t), ptl_iv_intlist(dims, n), ptl_iv_bool(1),
                         ptl_iv_none()};
    return ptl_call_tensor(PTL_OP_sum_dim_IntList, args);
}

static PtlTensorImpl *
call_ints(PtlOpId id, PtlTensorImpl *t, const int64_t *v, int n)
{
    PtlIValue args[3] = {ptl_iv_tensor(t), ptl_iv_intlist(v, n), ptl_iv_bool(0)};
    return ptl_call_tensor(id, args);
}

/* The kinds of dims of a pairwise product, in the order the left operand is laid out */
enum { K_BATCH, K_LEFT, K_SUM, K_REST, K_RIGHT, K_COUNT };

/* The dims of each kind, in order[], for the kinds listed in kinds[0..K_COUNT) */
static void
order_dims(const int *kind, int D, const int *kinds, int64_t *order)
{
    int n = 0;
    for (int k = 0; k < K_COUNT; k++) {
        for (int d = 0; d < D; d++) {
            if (kind[d] == kinds[k]) {
                order[n++] = d;
            }
        }
    }
}

/* The product of two full-layout tensors summed over the dims of mask; the result is in
 * the full layout with size 1 in the summed dims (new ref).
 * left [B, M, K] (batch, left-only, summed) @ right [B, K, N] (batch, summed, right-only);
 * the other dims have size 1 on the side they trail. */
static PtlTensorImpl *
sum_product(PtlTensorImpl *left, PtlTensorImpl *right, const unsigned char *mask, int D)
{
    static const int lkinds[K_COUNT] = {K_BATCH, K_LEFT, K_SUM, K_REST, K_RIGHT};
    static const int rkinds[K_COUNT] = {K_BATCH, K_SUM, K_RIGHT, K_REST, K_LEFT};
    static const int okinds[K_COUNT] = {K_BATCH, K_LEFT, K_RIGHT, K_SUM, K_REST};
    unsigned char lmask[PTL_MAX_DIMS] = {0}, rmask[PTL_MAX_DIMS] = {0};
    int64_t lperm[PTL_MAX_DIMS], rperm[PTL_MAX_DIMS], operm[PTL_MAX_DIMS];
    int64_t inv[PTL_MAX_DIMS], osizes[PTL_MAX_DIMS];
    int kind[PTL_MAX_DIMS];
    PtlTensorImpl *l = NULL, *r = NULL, *a = NULL, *b = NULL, *prod = NULL, *res = NULL, *t;

    /* a summed dim only one side has is summed on that side alone */
    for (int d = 0; d < D; d++) {
        if (mask[d]) {
            lmask[d] = right->sizes[d] == 1;
            rmask[d] = left->sizes[d] == 1;
        }
    }
    if ((l = sum_keep(left, lmask, D)) == NULL || (r = sum_keep(right, rmask, D)) == NULL) {
        goto error;
    }
    int64_t dims[K_COUNT] = {1, 1, 1, 1, 1};
    for (int d = 0; d < D; d++) {
        int64_t sl = l->sizes[d], sr = r->sizes[d];
        if (sl != 1 && sr != 1) {
            kind[d] = mask[d] ? K_SUM : K_BATCH;
        }
        else {
            kind[d] = sl != 1 ? K_LEFT : sr != 1 ? K_RIGHT : K_REST;
        }
        dims[kind[d]] *= sl != 1 ? sl : sr;
    }
    order_dims(kind, D, lkinds, lperm);
    order_dims(kind, D, rkinds, rperm);
    order_dims(kind, D, okinds, operm);
    int64_t l3[3] = {dims[K_BATCH], dims[K_LEFT], dims[K_SUM]};
    int64_t r3[3] = {dims[K_BATCH], dims[K_SUM], dims[K_RIGHT]};
    if ((t = call_ints(PTL_OP_permute, l, lperm, D)) == NULL) {
        goto error;
    }
    a = call_ints(PTL_OP_reshape, t, l3, 3);
    ptl_decref(t);
    if (a == NULL || (t = call_ints(PTL_OP_permute, r, rperm, D)) == NULL) {
        goto error;
    }
    b = call_ints(PTL_OP_reshape, t, r3, 3);
    ptl_decref(t);
    if (b == NULL) {
        goto error;
    }
    PtlIValue args[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    if ((prod = ptl_call_tensor(PTL_OP_bmm, args)) == NULL) {
        goto error;
    }
    /* [B, M, N] -> [batch, left, right, 1...] -> the full layout */
    for (int k = 0; k < D; k++) {
        int d = (int)operm[k];
        osizes[k] = kind[d] == K_BATCH || kind[d] == K_LEFT ? l->sizes[d]
                    : kind[d] == K_RIGHT ? r->sizes[d] : 1;
        inv[d] = k;
    }
    if ((t = call_ints(PTL_OP_reshape, prod, osizes, D)) == NULL) {
        goto error;
    }
    res = call_ints(PTL_OP_permute, t, inv, D);
    ptl_decref(t);
error:
    ptl_xdecref(l);
    ptl_xdecref(r);
    ptl_xdecref(a);
    ptl_xdecref(b);
    ptl_xdecref(prod);
    return res;
}

/* Operand i of the equation viewed in the full layout (new ref); checks its sizes against
 * those seen so far (lay->sizes). */
static PtlTensorImpl *
full_view(PtlTensorImpl *t, int i, const Term *term, Layout *lay)
{
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS];
    int64_t perm[PTL_MAX_DIMS];
    int pos_of[PTL_MAX_DIMS];
    int D = lay->D, repeated = 0, d = 0;
    int ell_dims = t->dim - (term->n - term->has_ell);

    for (int k = 0; k < D; k++) {
        sizes[k] = -1;
        strides[k] = 0;
    }
    for (int k = 0; k < term->n; k++) {
        int label = term->labels[k];
        if (label == ELL) {
            for (int j = 0; j < ell_dims; j++, d++) {
                int pos = lay->ell_pos + lay->ell_num - ell_dims + j;
                int64_t sz = t->sizes[d], seen = lay->sizes[pos];
                if (seen != 1 && sz != 1 && sz != seen) {
                    ptl_error_set(PTL_ERR_RUNTIME, "einsum(): dimension %d covered by ellipsis "
                                  "in operand %dhas size %lld which does not broadcast with "
                                  "previously seen ellipsis with size %lld for the respective "
                                  "dimension", j, i, (long long)sz, (long long)seen);
                    return NULL;
                }
                if (seen == 1) {
                    lay->sizes[pos] = sz;
                }
                sizes[pos] = sz;
                strides[pos] = t->strides[d];
                pos_of[d] = pos;
                lay->last_op[pos] = i;
            }
            continue;
        }
        int pos = lay->label_pos[label];
        int64_t sz = t->sizes[d];
        if (sizes[pos] >= 0) {
            if (sz != sizes[pos]) {
                ptl_error_set(PTL_ERR_RUNTIME, "einsum(): subscript %c is repeated for operand %d "
                              "but the sizes don't match, %lld != %lld", char_of(label), i,
                              (long long)sz, (long long)sizes[pos]);
                return NULL;
            }
            strides[pos] += t->strides[d];
            repeated = 1;
        }
        else {
            int64_t seen = lay->sizes[pos];
            if (seen != 1 && sz != 1 && sz != seen) {
                ptl_error_set(PTL_ERR_RUNTIME, "einsum(): subscript %c has size %lld for operand "
                              "%d which does not broadcast with previously seen size %lld",
                              char_of(label), (long long)sz, i, (long long)seen);
                return NULL;
            }
            if (seen == 1) {
                lay->sizes[pos] = sz;
            }
            sizes[pos] = sz;
            strides[pos] = t->strides[d];
            lay->last_op[pos] = i;
        }
        pos_of[d] = pos;
        d++;
    }
    for (int k = 0; k < D; k++) {
        if (sizes[k] < 0) {
            sizes[k] = 1;
        }
    }
    if (repeated) {
        /* the diagonal of the repeated labels, already in the full layout */
        PtlIValue args[4] = {ptl_iv_tensor(t), ptl_iv_intlist(sizes, D),
                             ptl_iv_intlist(strides, D), ptl_iv_none()};
        return ptl_call_tensor(PTL_OP_as_strided, args);
    }
    /* a permutation into full order, then size-1 dims inserted (a view) */
    int n = 0;
    for (int k = 0; k < D; k++) {
        for (int j = 0; j < t->dim; j++) {
            if (pos_of[j] == k) {
                perm[n++] = j;
            }
        }
    }
    PtlTensorImpl *p = call_ints(PTL_OP_permute, t, perm, t->dim), *res;
    if (p == NULL) {
        return NULL;
    }
    res = call_ints(PTL_OP_reshape, p, sizes, D);
    ptl_decref(p);
    return res;
}

/* Parses the equation for n operands into terms[0..n) and out; fills lay->label_pos,
 * out_ndims, ell_num, ell_pos and D.  0 or -1. */
static int
parse_equation(const char *eq, PtlTensorImpl **ts, int64_t n, Term *terms, Term *out,
               Layout *lay)
{
    size_t len = strlen(eq);
    const char *arrow = strstr(eq, "->");
    size_t lhs_end = arrow ? (size_t)(arrow - eq) : len;
    int64_t cur = 0;
    size_t begin = 0;
    int count[NLABELS] = {0};

    for (size_t i = 0; i <= lhs_end; i++) {
        if (i < lhs_end && eq[i] != ',') {
            continue;
        }
        if (parse_term(eq, begin, i, (int)cur, &terms[cur]) < 0) {
            return -1;
        }
        if (i < lhs_end) {
            if (++cur >= n) {
                return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): fewer operands were provided "
                                     "than specified in the equation");
            }
            begin = i + 1;
        }
    }
    if (cur != n - 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): more operands were provided than "
                             "specified in the equation");
    }
    lay->ell_num = 0;
    for (int64_t i = 0; i < n; i++) {
        const Term *t = &terms[i];
        int nsub = t->n - t->has_ell;
        if (t->has_ell) {
            if (nsub > ts[i]->dim) {
                return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): the number of subscripts in the "
                                     "equation (%d) is more than the number of dimensions (%d) "
                                     "for operand %lld", nsub, ts[i]->dim, (long long)i);
            }
            if (ts[i]->dim - nsub > lay->ell_num) {
                lay->ell_num = ts[i]->dim - nsub;
            }
        }
        else if (nsub != ts[i]->dim) {
            return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): the number of subscripts in the "
                                 "equation (%d) does not match the number of dimensions (%d) for "
                                 "operand %lld and no ellipsis was given", nsub, ts[i]->dim,
                                 (long long)i);
        }
        for (int k = 0; k < t->n; k++) {
            if (t->labels[k] != ELL) {
                count[t->labels[k]]++;
            }
        }
    }
    for (int l = 0; l < NLABELS; l++) {
        lay->label_pos[l] = -1;
    }
    int D = 0;
    out->n = 0;
    out->has_ell = 0;
    if (arrow) {
        if (parse_term(eq, lhs_end + 2, len, -1, out) < 0) {
            return -1;
        }
        for (int k = 0; k < out->n; k++) {
            int label = out->labels[k];
            if (label == ELL) {
                lay->ell_pos = D;
                D += lay->ell_num;
                continue;
            }
            if (count[label] == 0) {
                return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): output subscript %c does not "
                                     "appear in the equation for any input operand",
                                     char_of(label));
            }
            if (lay->label_pos[label] >= 0) {
                return ptl_error_set(PTL_ERR_RUNTIME, "einsum(): output subscript %c appears "
                                     "more than once in the output", char_of(label));
            }
            lay->label_pos[label] = D++;
        }
    }
    else {
        /* implicit: the ellipsis, then the labels seen once, in label order */
        out->has_ell = 1;
        lay->ell_pos = 0;
        D = lay->ell_num;
        for (int l = 0; l < NLABELS; l++) {
            if (count[l] == 1) {
                lay->label_pos[l] = D++;
            }
        }
    }
    lay->out_ndims = D;
    if (!out->has_ell) {
        lay->ell_pos = D;
        D += lay->ell_num;
    }
    for (int l = 0; l < NLABELS; l++) {
        if (count[l] > 0 && lay->label_pos[l] < 0) {
            lay->label_pos[l] = D++;
        }
    }
    lay->D = D;
    return 0;
}

/* einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor
 * Note [einsum lowering].  `path` (an opt_einsum contraction order) is accepted and the
 * operands are contracted left to right. */
static int
einsum_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    const char *eq = s[0].u.s;
    PtlTensorImpl **ts = s[1].u.tl.data;
    int64_t n = s[1].u.tl.n;
    Term *terms = NULL, out;
    Layout lay = {0};
    PtlTensorImpl **views = NULL, *res = NULL, *t;
    unsigned char mask[PTL_MAX_DIMS];

    if (n == 0) {
        return ptl_error_set(PTL_ERR_VALUE, "einsum(): must specify the equation string and at "
                             "least one operand, or at least one operand and its subscripts "
                             "list");
    }
    terms = calloc((size_t)n, sizeof(Term));
    views = calloc((size_t)n, sizeof(PtlTensorImpl *));
    if (terms == NULL || views == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "einsum(): out of memory");
        goto error;
    }
    if (parse_equation(eq, ts, n, terms, &out, &lay) < 0) {
        goto error;
    }
    if (lay.D > PTL_MAX_DIMS) {
        ptl_error_set(PTL_ERR_RUNTIME, "einsum(): the equation needs %d dimensions; pytorchlite "
                      "supports at most %d", lay.D, PTL_MAX_DIMS);
        goto error;
    }
    for (int d = 0; d < lay.D; d++) {
        lay.sizes[d] = 1;
        lay.last_op[d] = -1;
    }
    for (int64_t i = 0; i < n; i++) {
        if ((views[i] = full_view(ts[i], (int)i, &terms[i], &lay)) == NULL) {
            goto error;
        }
    }
    /* contracted dims no later operand has: summed in the first, then pairwise */
    for (int d = 0; d < lay.D; d++) {
        mask[d] = d >= lay.out_ndims && lay.last_op[d] <= 0;
    }
    if ((res = sum_keep(views[0], mask, lay.D)) == NULL) {
        goto error;
    }
    for (int64_t i = 1; i < n; i++) {
        for (int d = 0; d < lay.D; d++) {
            mask[d] = d >= lay.out_ndims && lay.last_op[d] == i;
        }
        t = sum_product(res, views[i], mask, lay.D);
        ptl_decref(res);
        if ((res = t) == NULL) {
            goto error;
        }
    }
    t = call_ints(PTL_OP_reshape, res, res->sizes, lay.out_ndims);
    ptl_decref(res);
    res = t;
error:
    for (int64_t i = 0; views != NULL && i < n; i++) {
        ptl_xdecref(views[i]);
    }
    free(views);
    free(terms);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* tensordot(Tensor self, Tensor other, int[] dims_self, int[] dims_other) -> Tensor
 * self's free dims + other's free dims: self permuted to [free, contracted] as [M, K] times
 * other permuted to [contracted, free] as [K, N] through mm.  A contracted dim of size 1 on
 * one side is summed on the other side first (broadcast, as in PyTorch). */
static int
tensordot_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t1 = s[0].u.t, *t2 = s[1].u.t, *a = NULL, *b = NULL, *prod = NULL;
    PtlTensorImpl *res = NULL, *t;
    int64_t n = s[2].u.il.n, perm1[PTL_MAX_DIMS], perm2[PTL_MAX_DIMS];
    int64_t osizes[2 * PTL_MAX_DIMS];
    unsigned char c1[PTL_MAX_DIMS] = {0}, c2[PTL_MAX_DIMS] = {0};
    unsigned char m1[PTL_MAX_DIMS] = {0}, m2[PTL_MAX_DIMS] = {0};

    if (n != s[3].u.il.n) {
        return ptl_error_set(PTL_ERR_RUNTIME, "both dimension lists should have same length");
    }
    if (t1->dtype != t2->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "both inputs should have same dtype");
    }
    int64_t K = 1, M = 1, N = 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t d1 = s[2].u.il.data[i], d2 = s[3].u.il.data[i];
        if (ptl_wrap_dim(&d1, t1->dim) < 0 || ptl_wrap_dim(&d2, t2->dim) < 0) {
            return -1;
        }
        int64_t s1 = t1->sizes[d1], s2 = t2->sizes[d2];
        if (s1 != s2 && s1 != 1 && s2 != 1) {
            return ptl_error_set(PTL_ERR_RUNTIME, "contracted dimensions need to match, but first "
                                 "has size %lld in dim %lld and second has size %lld in dim %lld",
                                 (long long)s1, (long long)d1, (long long)s2, (long long)d2);
        }
        c1[d1] = c2[d2] = 1;
        m1[d1] = s2 == 1 && s1 != 1;
        m2[d2] = s1 == 1 && s2 != 1;
    }
    if ((a = sum_keep(t1, m1, t1->dim)) == NULL || (b = sum_keep(t2, m2, t2->dim)) == NULL) {
        goto error;
    }
    int no = 0, n1 = 0, n2 = 0;
    for (int d = 0; d < t1->dim; d++) {
        if (!c1[d]) {
            perm1[n1++] = d;
            osizes[no++] = a->sizes[d];
            M *= a->sizes[d];
        }
    }
    /* the contracted dims in list order, on both sides */
    for (int64_t i = 0; i < n; i++) {
        int64_t d1 = s[2].u.il.data[i], d2 = s[3].u.il.data[i];
        ptl_wrap_dim(&d1, t1->dim);
        ptl_wrap_dim(&d2, t2->dim);
        perm1[n1++] = d1;
        perm2[n2++] = d2;
        K *= a->sizes[d1];
    }
    for (int d = 0; d < t2->dim; d++) {
        if (!c2[d]) {
            perm2[n2++] = d;
            osizes[no++] = b->sizes[d];
            N *= b->sizes[d];
        }
    }
    int64_t mk[2] = {M, K}, kn[2] = {K, N};
    if ((t = call_ints(PTL_OP_permute, a, perm1, t1->dim)) == NULL) {
        goto error;
    }
    ptl_decref(a);
    a = call_ints(PTL_OP_reshape, t, mk, 2);
    ptl_decref(t);
    if (a == NULL || (t = call_ints(PTL_OP_permute, b, perm2, t2->dim)) == NULL) {
        goto error;
    }
    ptl_decref(b);
    b = call_ints(PTL_OP_reshape, t, kn, 2);
    ptl_decref(t);
    if (b == NULL) {
        goto error;
    }
    PtlIValue args[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    if ((prod = ptl_call_tensor(PTL_OP_mm, args)) == NULL) {
        goto error;
    }
    res = call_ints(PTL_OP_reshape, prod, osizes, no);
error:
    ptl_xdecref(a);
    ptl_xdecref(b);
    ptl_xdecref(prod);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

static const PtlKernelReg einsum_kernels[] = {
    {PTL_OP_einsum, PTL_KEY_COMPOSITE_IMPLICIT, einsum_composite},
    {PTL_OP_tensordot, PTL_KEY_COMPOSITE_IMPLICIT, tensordot_composite},
};
PTL_DEFINE_REGISTER(einsum_kernels)
