/* complex_reduce.c -- the complex64/complex128 kernels of the scans and folds at the Complex
 * dispatch key: cumsum, cumprod, prod, trace, count_nonzero, nonzero, all, any, var and
 * std (and var_mean, std_mean).  Mirrors the
 * complex paths of ATen/native/ReduceOps.cpp (cumsum, cumprod, prod, trace) and
 * TensorAdvancedIndexing.cpp (count_nonzero, nonzero).  See Note [Complex dtypes] in
 * complex.c, and Note [Complex folds] below.
 *
 * Note [Complex folds]
 * ~~~~~~~~~~~~~~~~~~~~
 * The linear ones reuse the real kernels: cumsum runs on view_as_real(self) (the real and
 * imaginary parts scan independently) and trace sums the diagonal (sum's complex kernel).
 * count_nonzero, nonzero, all and any ask ne(self, 0) first: a NaN part counts as nonzero,
 * -0.0 as zero, as PyTorch's `!= 0`.  var and std add the parts' variances.  prod and cumprod multiply along one dim of self where it lies
 * (any strides), one row at a time, with the textbook product (ptl_cmul) accumulated in
 * complex128 and rounded once per result for complex64.  A dtype= argument converts self
 * first; a real one takes the real parts (PyTorch's cast, with copy_'s warning) and runs
 * the real kernel. */
#include <string.h>

#include "../../c10/error.h"
#include "../complex_math.h"
#include "native.h"

/* The real kernel's "\"<op>_cuda\" not implemented" for a complex tensor off the CPU (none
 * has a complex kernel there yet: Note [Complex dtypes]). */
static int
off_cpu_refusal(const PtlOperator *op, const PtlTensorImpl *self)
{
    char kname[80];
    ptl_kernel_name(op, kname, sizeof(kname));
    memcpy(kname + strlen(kname) - 3, "cuda", 5);
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kname,
                         ptl_dtype_legacy_name(self->dtype));
}

/* The op's dtype= argument (at `at`) applied: 1 when a real dtype sent the call to the real
 * kernel (its status in *rc), else 0 with *x a new reference to self in the complex dtype
 * to fold (NULL, with *rc = -1, on error). */
static int
apply_dtype(const PtlOperator *op, PtlIValue *s, int at, PtlTensorImpl **x, int *rc)
{
    PtlTensorImpl *self = s[0].u.t;
    PtlDtype dt = s[at].tag == PTL_IV_DTYPE ? s[at].u.dtype : self->dtype;
    *rc = -1;
    *x = NULL;
    if (dt == self->dtype) {
        ptl_incref(self);
        *x = self;
        return 0;
    }
    PtlTensorImpl *c = ptl_cast(self, dt);
    if (c == NULL) {
        return 1;
    }
    if (ptl_dtype_is_complex(dt)) {
        *x = c;
        return 0;
    }
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    for (int i = 0; i < op->schema.nargs; i++) {
        st[i] = s[i];
    }
    st[0] = ptl_iv_tensor(c);
    st[at] = ptl_iv_none();
    *rc = ptl_dispatcher_call(op, st);
    ptl_decref(c);
    if (*rc == 0) {
        s[0] = st[0];
    }
    return 1;
}

static int
set_result(PtlIValue *s, PtlTensorImpl *t)
{
    if (t == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(t);
    return 0;
}

/* ---- products along one dim ---- */

/* o[0] (cumulative: o[k * os] for every k) = the product of x[0..n) read xs bytes apart */
typedef void (*RowFold)(char *o, int64_t os, const char *x, int64_t xs, int64_t n);

static void
prod_row_c8(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    (void)os;
    ptl_complex128 acc = 1;
    for (int64_t i = 0; i < n; i++) {
        const ptl_complex64 v = *(const ptl_complex64 *)(x + i * xs);
        acc = ptl_cmul(acc, (ptl_complex128)v);
    }
    *(ptl_complex64 *)o = (ptl_complex64)acc;
}

static void
prod_row_c16(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    (void)os;
    ptl_complex128 acc = 1;
    for (int64_t i = 0; i < n; i++) {
        acc = ptl_cmul(acc, *(const ptl_complex128 *)(x + i * xs));
    }
    *(ptl_complex128 *)o = acc;
}

static void
cumprod_row_c8(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    ptl_complex128 acc = 1;
    for (int64_t i = 0; i < n; i++) {
        const ptl_complex64 v = *(const ptl_complex64 *)(x + i * xs);
        acc = ptl_cmul(acc, (ptl_complex128)v);
        *(ptl_complex64 *)(o + i * os) = (ptl_complex64)acc;
    }
}

static void
cumprod_row_c16(char *o, int64_t os, const char *x, int64_t xs, int64_t n)
{
    ptl_complex128 acc = 1;
    for (int64_t i = 0; i < n; i++) {
        acc = ptl_cmul(acc, *(const ptl_complex128 *)(x + i * xs));
        *(ptl_complex128 *)(o + i * os) = acc;
    }
}

/* fold(out's row, x's row) for every index of x's dims but d (out: x's dims, size 1 at d
 * for a product, x's size for a cumulative one); d = -1 folds a 0-dim x's one element. */
static void
for_each_row(PtlTensorImpl *out, PtlTensorImpl *x, int d, RowFold fold)
{
    const int64_t isz = (int64_t)ptl_tensor_itemsize(x);
    int64_t idx[PTL_MAX_DIMS] = {0}, rows = 1;
    int64_t n = d >= 0 ? x->sizes[d] : 1;
    int64_t xs = d >= 0 ? x->strides[d] * isz : 0, os = d >= 0 ? out->strides[d] * isz : 0;
    char *ob = ptl_tensor_data(out);
    const char *xb = ptl_tensor_data(x);
    for (int k = 0; k < x->dim; k++) {
        rows *= k != d ? x->sizes[k] : 1;
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t xo = 0, oo = 0;
        for (int k = 0; k < x->dim; k++) {
            xo += k != d ? idx[k] * x->strides[k] : 0;
            oo += k != d ? idx[k] * out->strides[k] : 0;
        }
        fold(ob + oo * isz, os, xb + xo * isz, xs, n);
        for (int k = x->dim - 1; k >= 0; k--) {
            if (k == d) {
                continue;
            }
            if (++idx[k] < x->sizes[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
}

/* cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor: [*] -> [*] */
static int
cumprod_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *x, *out;
    int64_t d = s[1].u.i;
    int rc;
    if (ptl_wrap_dim(&d, s[0].u.t->dim) < 0) {
        return -1;
    }
    if (apply_dtype(op, s, 2, &x, &rc)) {
        return rc;
    }
    if (x->device.type != PTL_DEVICE_CPU) {
        ptl_decref(x);
        return off_cpu_refusal(op, x);
    }
    if ((out = ptl_empty(x->dim, x->sizes, x->dtype, x->device)) != NULL) {
        int c16 = x->dtype == PTL_DTYPE_COMPLEX128;
        for_each_row(out, x, x->dim > 0 ? (int)d : -1, c16 ? cumprod_row_c16 : cumprod_row_c8);
    }
    ptl_decref(x);
    return set_result(s, out);
}

/* prod(Tensor self, *, ScalarType? dtype=None) -> Tensor: [*] -> [];
 * prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None): [*]
 * without dim (size 1 with keepdim); an empty product is 1 */
static int
prod_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int has_dim = op->id == PTL_OP_prod_dim_int, rc;
    int64_t d = has_dim ? s[1].u.i : 0, sizes[PTL_MAX_DIMS];
    PtlTensorImpl *x, *flat = NULL, *out;
    if (has_dim && ptl_wrap_dim(&d, s[0].u.t->dim) < 0) {
        return -1;
    }
    if (apply_dtype(op, s, has_dim ? 3 : 1, &x, &rc)) {
        return rc;
    }
    if (x->device.type != PTL_DEVICE_CPU) {
        ptl_decref(x);
        return off_cpu_refusal(op, x);
    }
    if (!has_dim && x->dim > 0) {   /* all of it: the flattened elements, one row */
        PtlTensorImpl *c = ptl_contiguous(x);
        flat = c == NULL ? NULL : ptl_tensor_impl_view(c, 1, &c->numel, NULL, c->storage_offset);
        ptl_xdecref(c);
        ptl_decref(x);
        if ((x = flat) == NULL) {
            return -1;
        }
    }
    memcpy(sizes, x->sizes, sizeof(int64_t) * (size_t)x->dim);
    if (x->dim > 0) {
        sizes[d] = 1;
    }
    if ((out = ptl_empty(x->dim, sizes, x->dtype, x->device)) != NULL) {
        int c16 = x->dtype == PTL_DTYPE_COMPLEX128;
        for_each_row(out, x, x->dim > 0 ? (int)d : -1, c16 ? prod_row_c16 : prod_row_c8);
        if (x->dim > 0 && (!has_dim || !s[2].u.b)) {   /* drop the reduced dim */
            memmove(sizes + d, sizes + d + 1, sizeof(int64_t) * (size_t)(x->dim - 1 - d));
            ptl_tensor_impl_set_sizes(out, x->dim - 1, sizes, NULL);
        }
    }
    ptl_decref(x);
    return set_result(s, out);
}

/* ---- cumsum and trace: the real kernels' sums ---- */

/* cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor: [*] -> [*], the parts
 * scanned by the real kernel on view_as_real(self) (a 0-dim self is its own sum) */
static int
cumsum_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *x, *r = NULL, *scanned = NULL, *c = NULL, *out = NULL;
    int64_t d = s[1].u.i;
    int rc;
    if (ptl_wrap_dim(&d, s[0].u.t->dim) < 0) {
        return -1;
    }
    if (apply_dtype(op, s, 2, &x, &rc)) {
        return rc;
    }
    PtlIValue a[3] = {ptl_iv_tensor(x), ptl_iv_int(d), ptl_iv_none()};
    if (x->dim == 0) {
        out = ptl_call_k(PTL_OP_clone, 1, a);
    }
    else if ((r = ptl_call_k(PTL_OP_view_as_real, 1, a)) != NULL) {
        a[0] = ptl_iv_tensor(r);
        if ((scanned = ptl_call_tensor(PTL_OP_cumsum, a)) != NULL &&
            (c = ptl_contiguous(scanned)) != NULL) {
            a[0] = ptl_iv_tensor(c);
            out = ptl_call_k(PTL_OP_view_as_complex, 1, a);
        }
    }
    ptl_decref(x);
    ptl_xdecref(r);
    ptl_xdecref(scanned);
    ptl_xdecref(c);
    return set_result(s, out);
}

/* trace(Tensor self) -> Tensor: [m, n] -> [], the diagonal's sum */
static int
trace_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *diag, *out;
    if (self->dim != 2) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "trace: expected a matrix, but got tensor with dim %d", self->dim);
    }
    PtlIValue a[1] = {ptl_iv_tensor(self)};
    if ((diag = ptl_call_k(PTL_OP_diagonal, 1, a)) == NULL) {
        return -1;
    }
    a[0] = ptl_iv_tensor(diag);
    out = ptl_call_k(PTL_OP_sum, 1, a);
    ptl_decref(diag);
    return set_result(s, out);
}

/* ---- count_nonzero, nonzero, all and any: through ne(self, 0) ---- */

/* count_nonzero(Tensor self, int? dim=None), count_nonzero.dim_IntList(Tensor self, int[]
 * dim), nonzero(Tensor self) and all / any in their three overloads: the real kernels on
 * self != 0 */
static int
nonzero_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *zero, *ne;
    if ((zero = ptl_empty(0, NULL, self->dtype, self->device)) == NULL) {
        return -1;
    }
    memset(ptl_tensor_data(zero), 0, ptl_tensor_itemsize(zero));
    PtlIValue a[2] = {ptl_iv_tensor(self), ptl_iv_tensor(zero)};
    ne = ptl_call_k(PTL_OP_ne_Tensor, 2, a);
    ptl_decref(zero);
    if (ne == NULL) {
        return -1;
    }
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    for (int i = 0; i < op->schema.nargs; i++) {
        st[i] = s[i];
    }
    st[0] = ptl_iv_tensor(ne);
    int rc = ptl_dispatcher_call(op, st);
    ptl_decref(ne);
    if (rc == 0) {
        s[0] = st[0];
    }
    return rc;
}

/* ---- var and std: the parts' variances add up ---- */

/* The var op of the same overload as op (std -> var, std_mean.dim -> var_mean.dim, ...). */
static PtlOpId
var_of(int op)
{
    static const PtlOpId pairs[][2] = {
        {PTL_OP_std, PTL_OP_var}, {PTL_OP_std_dim, PTL_OP_var_dim},
        {PTL_OP_std_correction, PTL_OP_var_correction}, {PTL_OP_std_mean, PTL_OP_var_mean},
        {PTL_OP_std_mean_dim, PTL_OP_var_mean_dim},
        {PTL_OP_std_mean_correction, PTL_OP_var_mean_correction},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        if ((int)pairs[i][0] == op) {
            return pairs[i][1];
        }
    }
    return (PtlOpId)op;
}

/* var / std / var_mean / std_mean in their three overloads, of a complex self: the variance
 * is E|x - E x|^2 = var(real) + var(imag), a real tensor (std its square root), and the mean
 * joins the parts' means, as PyTorch's */
static int
var_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (!ptl_dtype_is_complex(s[0].u.t->dtype)) {
        /* a real self with a complex correction: the Complex key's fallback converts it */
        return ptl_dispatcher_fallback(PTL_KEY_COMPLEX)(op, ks, s);
    }
    const PtlOperator *vop = ptl_op(var_of(op->id));
    const int is_std = vop->id != op->id, with_mean = op->schema.nrets == 2;
    PtlIValue st[2][PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *parts[2] = {NULL, NULL}, *var = NULL, *mean = NULL;
    int done[2] = {0, 0}, rc = -1;
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < op->schema.nargs; i++) {
            st[p][i] = s[i];
        }
        if ((parts[p] = ptl_call_k(p ? PTL_OP_imag : PTL_OP_real, 1, s)) == NULL) {
            goto done;
        }
        st[p][0] = ptl_iv_tensor(parts[p]);
        if (ptl_dispatcher_call(vop, st[p]) < 0) {
            goto done;
        }
        done[p] = 1;
    }
    PtlIValue a[3] = {st[0][0], st[1][0], ptl_iv_int(1)};
    if ((var = ptl_call_k(PTL_OP_add_Tensor, 3, a)) == NULL) {
        goto done;
    }
    if (is_std) {
        PtlTensorImpl *v = var;
        a[0] = ptl_iv_tensor(v);
        var = ptl_call_k(PTL_OP_sqrt, 1, a);
        ptl_decref(v);
        if (var == NULL) {
            goto done;
        }
    }
    if (with_mean) {
        PtlIValue m[2] = {st[0][1], st[1][1]};
        if ((mean = ptl_call_k(PTL_OP_complex, 2, m)) == NULL) {
            PTL_CLEAR(var);
            goto done;
        }
        s[1] = ptl_iv_tensor(mean);
    }
    s[0] = ptl_iv_tensor(var);
    rc = 0;
done:
    for (int p = 0; p < 2; p++) {
        ptl_xdecref(parts[p]);
        for (int i = 0; done[p] && i < vop->schema.nrets; i++) {
            ptl_ivalue_release(&st[p][i]);
        }
    }
    return rc;
}

static const PtlKernelReg complex_reduce_kernels[] = {
    {PTL_OP_cumsum, PTL_KEY_COMPLEX, cumsum_complex},
    {PTL_OP_cumprod, PTL_KEY_COMPLEX, cumprod_complex},
    {PTL_OP_prod, PTL_KEY_COMPLEX, prod_complex},
    {PTL_OP_prod_dim_int, PTL_KEY_COMPLEX, prod_complex},
    {PTL_OP_trace, PTL_KEY_COMPLEX, trace_complex},
    {PTL_OP_count_nonzero, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_count_nonzero_dim_IntList, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_nonzero, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_all, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_all_dim, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_all_dims, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_any, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_any_dim, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_any_dims, PTL_KEY_COMPLEX, nonzero_complex},
    {PTL_OP_var, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_mean, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_mean_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_var_mean_correction, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_mean, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_mean_dim, PTL_KEY_COMPLEX, var_complex},
    {PTL_OP_std_mean_correction, PTL_KEY_COMPLEX, var_complex},
};
PTL_DEFINE_REGISTER(complex_reduce_kernels)
