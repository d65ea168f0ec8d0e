/* linalg.c -- the matmul family: mm, bmm, addmm, addmv, mv, baddbmm, dot, vdot, outer and
 * matmul.  Mirrors ATen/native/LinearAlgebra.cpp and ATen/native/Blas.cpp.
 *
 * Every product goes through ptl_gemm (gemm.h, Note [GEMM blocking]); vectors are viewed as
 * n x 1 or 1 x n matrices.  The checks run in PyTorch's order with PyTorch's texts, so the
 * first error a user sees is the one torch would raise.  matmul and outer are composite
 * (CompositeImplicitAutograd in PyTorch): they call other ops through the dispatcher. */
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/tls.h"
#include "../resize_output.h"
#include "../tensor_iterator.h"
#include "gemm.h"
#include "gemm_complex.h"
#include "native.h"

static int
not_implemented(const char *name, PtlDtype dt)
{
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", name,
                         ptl_dtype_legacy_name(dt));
}

/* A rows x cols view of t with element strides rs, cs (new ref). */
static PtlTensorImpl *
as_matrix(PtlTensorImpl *t, int64_t rows, int64_t cols, int64_t rs, int64_t cs)
{
    int64_t sizes[2] = {rows, cols}, strides[2] = {rs, cs};
    return ptl_tensor_impl_view(t, 2, sizes, strides, t->storage_offset);
}

/* beta as the kernel will use it: integer results truncate scalars (PyTorch's
 * Scalar::to<int64_t>), so beta = 0.5 means "ignore self" for them as in torch. */
static double
effective_beta(const PtlIValue *beta, PtlDtype dt)
{
    double b = ptl_iv_to_double(beta);
    return ptl_dtype_is_floating(dt) || ptl_dtype_is_complex(dt) ? b
                                                                 : (double)ptl_iv_to_int(beta);
}

/* A Scalar's {real, imaginary} parts (Note [Complex Scalars] in ivalue.h), beta's real part
 * as effective_beta gives it; 0 when a complex one does not convert to a real dt (PyTorch's
 * "value cannot be converted to type float without overflow"), else -1. */
static int
scalar_parts(const PtlIValue *v, PtlDtype dt, int is_beta, double out[2])
{
    out[0] = is_beta ? effective_beta(v, dt) : ptl_iv_to_double(v);
    out[1] = ptl_iv_imag(v);
    return v->tag == PTL_IV_COMPLEX ? ptl_scalar_check_range(v, dt) : 0;
}

/* c = alpha * a @ b + beta * src (src NULL: c) for any dtype; alpha and beta {re, im}, the
 * imaginary parts read for complex c only (gemm_complex.c). */
static int
gemm_scaled(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, const double alpha[2],
            const double beta[2], PtlTensorImpl *src)
{
    if (ptl_dtype_is_complex(c->dtype)) {
        return ptl_gemm_complex(c, a, b, alpha, beta, src, 0);
    }
    return ptl_gemm_add(c, a, b, alpha[0], beta[0], src);
}

static const double one[2] = {1, 0}, zero[2] = {0, 0};

/* Note [Products written in place]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * addmm_, addmv_ and baddbmm_, and the .out overloads of addmm, addmv, baddbmm, bmm and
 * mm, write their product into their destination d (self, or out) through the GEMM's own beta
 * source: d = beta * d + alpha * a @ b in one pass (gemm.h's C), or d = beta * self +
 * alpha * a @ b with self read through its (broadcast) strides, never a new result copied
 * into d.  d is checked as PyTorch's structured kernels check it (ptl_check_output): an
 * in-place self must already have the result's dtype and shape (no broadcast: "Bad in-place
 * call"); an out= must have the result's dtype and is resized (Note [Resizing out=]);
 * neither may have two elements on one memory location.  When d shares storage with an
 * operand (x.addmm_(x, y)), or with a self it is not, the product goes to a new tensor
 * first and is copied into d: PyTorch's BLAS then reads operands it is overwriting and
 * returns an accident of its blocking; here the result is the product of the operands as
 * they were before the call. */

static int
same_memory(const PtlTensorImpl *x, const PtlTensorImpl *y)
{
    return x->numel > 0 && y->numel > 0 && x->storage->data == y->storage->data;
}

/* d = alpha * a @ b + beta * src (src NULL: d) for a destination d that may share memory
 * with a, b or src (Note [Products written in place]).  src of d's layout on d's memory is
 * d itself.  Borrows every tensor. */
static int
gemm_into(PtlTensorImpl *d, PtlTensorImpl *a, PtlTensorImpl *b, const double alpha[2],
          const double beta[2], PtlTensorImpl *src)
{
    PtlTensorImpl *tmp;
    if (src != NULL && src->storage_offset == d->storage_offset && same_memory(src, d) &&
        memcmp(src->strides, d->strides, (size_t)d->dim * sizeof(int64_t)) == 0) {
        src = NULL;
    }
    if (!same_memory(d, a) && !same_memory(d, b) && (src == NULL || !same_memory(d, src))) {
        return gemm_scaled(d, a, b, alpha, beta, src);
    }
    if ((tmp = ptl_empty(d->dim, d->sizes, d->dtype, d->device)) == NULL) {
        return -1;
    }
    int rc = gemm_scaled(tmp, a, b, alpha, beta, src != NULL ? src : d);
    if (rc == 0) {
        rc = ptl_copy_into(d, tmp);
    }
    ptl_decref(tmp);
    return rc;
}

/* c = alpha * a @ b + beta * c for vectors and matrices given as matrix views. */
static int
gemm_views(PtlTensorImpl *c, PtlTensorImpl *a, PtlTensorImpl *b, const double alpha[2],
           const double beta[2])
{
    int rc = c && a && b ? gemm_scaled(c, a, b, alpha, beta, NULL) : -1;
    ptl_xdecref(c);
    ptl_xdecref(a);
    ptl_xdecref(b);
    return rc;
}

/* ---- mm, bmm, addmm, baddbmm ---- */

static int
check_mm_shapes(PtlTensorImpl *m1, PtlTensorImpl *m2)
{
    if (m1->sizes[1] != m2->sizes[0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                             (long long)m1->sizes[0], (long long)m1->sizes[1],
                             (long long)m2->sizes[0], (long long)m2->sizes[1]);
    }
    return 0;
}

/* mm(Tensor self, Tensor mat2) -> Tensor, and mm.out(..., *, Tensor(a!) out):
 * (m, k) @ (k, n) -> (m, n) */
static int
mm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *mat2 = s[1].u.t, *out = ptl_kernel_out(op, s);
    PtlTensorImpl *res = NULL;

    PTL_CHECK(self->dim == 2, PTL_ERR_RUNTIME, "self must be a matrix");
    PTL_CHECK(mat2->dim == 2, PTL_ERR_RUNTIME, "mat2 must be a matrix");
    if (check_mm_shapes(self, mat2) < 0) {
        goto error;
    }
    PTL_CHECK(self->dtype == mat2->dtype, PTL_ERR_RUNTIME,
              "expected m1 and m2 to have the same dtype, but got: %s != %s",
              ptl_dtype_cpp_name(self->dtype), ptl_dtype_cpp_name(mat2->dtype));
    PTL_CHECK(out == NULL || out->dtype == self->dtype, PTL_ERR_RUNTIME,
              "Expected out tensor to have dtype %s, but got %s instead",
              ptl_dtype_cpp_name(self->dtype),
              ptl_dtype_cpp_name(out ? out->dtype : self->dtype));
    if (self->dtype == PTL_DTYPE_BOOL) {
        not_implemented("addmm_impl_cpu_", self->dtype);
        goto error;
    }
    int64_t sizes[2] = {self->sizes[0], mat2->sizes[1]};
    if (out != NULL) {
        if (ptl_resize_output(out, 2, sizes) < 0) {
            goto error;
        }
        ptl_incref(out);
        res = out;
    }
    else if ((res = ptl_empty(2, sizes, self->dtype, self->device)) == NULL) {
        goto error;
    }
    if (gemm_into(res, self, mat2, one, zero, NULL) < 0) {
        goto error;
    }
    if (out != NULL) {
        ptl_tensor_bump_version(out);
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    ptl_xdecref(res);
    return -1;
}

/* The checks bmm and baddbmm share, after batch1's, in PyTorch's order: batch2's shape,
 * the destination d of an in-place or out= call (NULL: none), the dtypes. */
static int
check_bmm(const PtlOperator *op, PtlTensorImpl *d, PtlTensorImpl *b1, PtlTensorImpl *b2)
{
    if (b2->dim != 3) {
        return ptl_error_set(PTL_ERR_RUNTIME, "batch2 must be a 3D tensor");
    }
    if (b2->sizes[0] != b1->sizes[0] || b2->sizes[1] != b1->sizes[2]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Expected size for first two dimensions of batch2 tensor to be: "
                             "[%lld, %lld] but got: [%lld, %lld].",
                             (long long)b1->sizes[0], (long long)b1->sizes[2],
                             (long long)b2->sizes[0], (long long)b2->sizes[1]);
    }
    int64_t sizes[3] = {b1->sizes[0], b1->sizes[1], b2->sizes[2]};
    if (d != NULL && ptl_check_output(d, op->schema.inplace, 3, sizes, b2->dtype) < 0) {
        return -1;
    }
    if (b1->dtype != b2->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME, "expected scalar type %s but found %s",
                             ptl_dtype_legacy_name(b1->dtype), ptl_dtype_legacy_name(b2->dtype));
    }
    return 0;
}

/* bmm(Tensor self, Tensor mat2) -> Tensor, and bmm.out(..., *, Tensor(a!) out):
 * (b, m, k) @ (b, k, n) -> (b, m, n) */
static int
bmm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *b1 = s[0].u.t, *b2 = s[1].u.t, *out = ptl_kernel_out(op, s), *res;

    if (b1->dim != 3) {
        return ptl_error_set(PTL_ERR_RUNTIME, "batch1 must be a 3D tensor");
    }
    if (check_bmm(op, out, b1, b2) < 0) {
        return -1;
    }
    if (b1->dtype == PTL_DTYPE_BOOL) {
        return not_implemented("bmm", b1->dtype);
    }
    int64_t sizes[3] = {b1->sizes[0], b1->sizes[1], b2->sizes[2]};
    if (out != NULL) {
        ptl_incref(out);
        res = out;
    }
    else if ((res = ptl_empty(3, sizes, b1->dtype, b1->device)) == NULL) {
        return -1;
    }
    if (gemm_into(res, b1, b2, one, zero, NULL) < 0) {
        ptl_decref(res);
        return -1;
    }
    if (out != NULL) {
        ptl_tensor_bump_version(out);
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* self broadcast to `sizes` through the expand op (PyTorch's expand errors); new ref. */
static PtlTensorImpl *
expand_to(PtlTensorImpl *self, int n, const int64_t *sizes)
{
    PtlIValue args[3] = {ptl_iv_tensor(self), ptl_iv_intlist(sizes, n), ptl_iv_bool(0)};
    return ptl_call_tensor(PTL_OP_expand, args);
}

/* The end of addmm and baddbmm: s[0] = beta * ex + alpha * a @ b (beta, alpha in s[3],
 * s[4]), written into the checked destination of an in-place or out= call (Note [Products
 * written in place]), else a new tensor of ex's shape, dtype and device; ex is self
 * broadcast to the product's shape (not read when beta is 0) and is released here.  name:
 * the kernel named when ex is bool. */
static int
add_product(const PtlOperator *op, PtlIValue *s, const char *name, PtlTensorImpl *ex,
            PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlTensorImpl *dst = ptl_kernel_out(op, s), *res = NULL;
    if (ex->dtype == PTL_DTYPE_BOOL) {
        not_implemented(name, ex->dtype);
        goto error;
    }
    double al[2], be[2];
    if (scalar_parts(&s[3], ex->dtype, 1, be) < 0 || scalar_parts(&s[4], ex->dtype, 0, al) < 0) {
        goto error;
    }
    if (dst != NULL) {
        ptl_incref(dst);
        res = dst;
    }
    else {
        res = ptl_empty(ex->dim, ex->sizes, ex->dtype, ex->device);
    }
    if (res == NULL || gemm_into(res, a, b, al, be, ex) < 0) {
        goto error;
    }
    if (dst != NULL) {
        ptl_tensor_bump_version(dst);
    }
    ptl_decref(ex);
    s[0] = ptl_iv_tensor(res);
    return 0;
error:
    ptl_decref(ex);
    ptl_xdecref(res);
    return -1;
}

/* addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1):
 * beta * self (broadcast to (m, n)) + alpha * (m, k) @ (k, n); also addmm_ and addmm.out
 * (Note [Products written in place]) */
static int
addmm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *m1 = s[1].u.t, *m2 = s[2].u.t, *ex = NULL;
    PtlTensorImpl *dst = ptl_kernel_out(op, s);

    PTL_CHECK(m1->dim == 2, PTL_ERR_RUNTIME, "mat1 must be a matrix, got %d-D tensor", m1->dim);
    PTL_CHECK(m2->dim == 2, PTL_ERR_RUNTIME, "mat2 must be a matrix, got %d-D tensor", m2->dim);
    if (check_mm_shapes(m1, m2) < 0) {
        goto error;
    }
    /* PyTorch compares self with mat2 first, then mat1 with mat2, then expands self */
    PTL_CHECK(self->dtype == m2->dtype, PTL_ERR_RUNTIME,
              "self and mat2 must have the same dtype, but got %s and %s",
              ptl_dtype_legacy_name(self->dtype), ptl_dtype_legacy_name(m2->dtype));
    PTL_CHECK(m1->dtype == m2->dtype, PTL_ERR_RUNTIME,
              "mat1 and mat2 must have the same dtype, but got %s and %s",
              ptl_dtype_legacy_name(m1->dtype), ptl_dtype_legacy_name(m2->dtype));
    int64_t sizes[2] = {m1->sizes[0], m2->sizes[1]};
    if (dst != NULL && ptl_check_output(dst, op->schema.inplace, 2, sizes, m1->dtype) < 0) {
        goto error;
    }
    if (op->schema.inplace) {
        ptl_incref(self);
        ex = self;
    }
    else if ((ex = expand_to(self, 2, sizes)) == NULL) {
        goto error;
    }
    return add_product(op, s, "addmm_impl_cpu_", ex, m1, m2);
error:
    ptl_xdecref(ex);
    return -1;
}

/* baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1):
 * beta * self (broadcast to (b, m, n)) + alpha * (b, m, k) @ (b, k, n); also baddbmm_ and
 * baddbmm.out (Note [Products written in place]: an in-place self is not broadcast) */
static int
baddbmm_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *b1 = s[1].u.t, *b2 = s[2].u.t, *ex = NULL;
    int64_t d = 2;

    PTL_CHECK(b1->dim == 3, PTL_ERR_RUNTIME, "batch1 must be a 3D tensor");
    /* PyTorch reads batch2.size(2) before checking batch2's rank */
    PTL_CHECK(b2->dim > 0, PTL_ERR_INDEX, "Dimension specified as 2 but tensor has no dimensions");
    if (ptl_wrap_dim(&d, b2->dim) < 0) {
        goto error;
    }
    int64_t sizes[3] = {b1->sizes[0], b1->sizes[1], b2->sizes[2]};
    if (op->schema.inplace) {
        ptl_incref(self);
        ex = self;
    }
    else if ((ex = expand_to(self, 3, sizes)) == NULL) {
        goto error;
    }
    PTL_CHECK(self->dtype == b1->dtype, PTL_ERR_RUNTIME,
              "Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s",
              ptl_dtype_cpp_name(self->dtype), ptl_dtype_cpp_name(b1->dtype),
              ptl_dtype_cpp_name(b2->dtype));
    if (check_bmm(op, ptl_kernel_out(op, s), b1, b2) < 0) {
        goto error;
    }
    return add_product(op, s, "baddbmm", ex, b1, b2);
error:
    ptl_xdecref(ex);
    return -1;
}

/* ---- addmv, mv, dot, vdot ---- */

/* res (m,) = beta * self + alpha * mat (m, k) @ vec (k,), res the destination of addmv_ or
 * addmv.out (Note [Products written in place]) or a new tensor.  self may be NULL (mv:
 * PyTorch then reports vec's dtype as "input" in a mismatch). */
static int
addmv_impl(const PtlOperator *op, PtlIValue *s, PtlTensorImpl *self, PtlTensorImpl *mat,
           PtlTensorImpl *vec, const PtlIValue *beta, const PtlIValue *alpha)
{
    PtlTensorImpl *dst = ptl_kernel_out(op, s), *res = NULL, *rm = NULL, *sm = NULL;
    PtlTensorImpl *am = NULL, *vm = NULL;
    int self_dim = self ? self->dim : 1, rc = -1;

    if (mat->dim != 2 || vec->dim != 1 || self_dim > 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "vector + matrix @ vector expected, got %d, %d, %d",
                             self_dim, mat->dim, vec->dim);
    }
    int64_t m = mat->sizes[0], k = mat->sizes[1];
    int64_t in = self ? self->numel : m;
    if (k != vec->sizes[0] || (in != m && in != 1)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                             (long long)in, (long long)m, (long long)k, (long long)vec->sizes[0]);
    }
    PtlDtype dt = self ? self->dtype : vec->dtype;
    if (dt != mat->dtype || dt != vec->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "addmv input tensors must have the same dtype, but got %s, %s, and %s",
                             ptl_dtype_legacy_name(dt), ptl_dtype_legacy_name(mat->dtype),
                             ptl_dtype_legacy_name(vec->dtype));
    }
    if (dst != NULL && ptl_check_output(dst, op->schema.inplace, 1, &m, dt) < 0) {
        return -1;
    }
    if (dt == PTL_DTYPE_BOOL) {
        return not_implemented("addmv_impl_cpu", dt);
    }
    double al[2] = {1.0, 0.0}, be[2] = {0.0, 0.0};
    if ((self != NULL && scalar_parts(beta, dt, 1, be) < 0) ||
        (alpha != NULL && scalar_parts(alpha, dt, 0, al) < 0)) {
        return -1;
    }
    if (dst != NULL) {
        ptl_incref(dst);
        res = dst;
    }
    else if ((res = ptl_empty(1, &m, dt, mat->device)) == NULL) {
        return -1;
    }
    /* self (1 or m elements) as the m x 1 beta source, read in place (a column of stride 0
     * when it broadcasts) */
    if (self != NULL && (sm = as_matrix(self, m, 1, in == 1 ? 0 : self->strides[0], 1)) == NULL) {
        goto done;
    }
    if ((rm = as_matrix(res, m, 1, res->strides[0], 1)) == NULL ||
        (am = as_matrix(mat, m, k, mat->strides[0], mat->strides[1])) == NULL ||
        (vm = as_matrix(vec, k, 1, vec->strides[0], 1)) == NULL ||
        gemm_into(rm, am, vm, al, be, sm) < 0) {
        goto done;
    }
    if (dst != NULL) {
        ptl_tensor_bump_version(dst);
    }
    s[0] = ptl_iv_tensor(res);
    res = NULL;
    rc = 0;
done:
    ptl_xdecref(res);
    ptl_xdecref(rm);
    ptl_xdecref(sm);
    ptl_xdecref(am);
    ptl_xdecref(vm);
    return rc;
}

/* addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1), addmv_
 * and addmv.out */
static int
addmv_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    return addmv_impl(op, s, s[0].u.t, s[1].u.t, s[2].u.t, &s[3], &s[4]);
}

/* mv(Tensor self, Tensor vec) -> Tensor:  (m, k) @ (k,) -> (m,) */
static int
mv_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    return addmv_impl(op, s, NULL, s[0].u.t, s[1].u.t, NULL, NULL);
}

/* dot(Tensor self, Tensor tensor) / vdot(Tensor self, Tensor other):  (k,) . (k,) -> ()
 * (vdot conjugates self: the same for real dtypes; gemm_complex.c's conj_a for complex) */
static int
dot_cpu(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *a = s[0].u.t, *b = s[1].u.t, *res;

    if (a->dim != 1 || b->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "1D tensors expected, but got %dD and %dD tensors",
                             a->dim, b->dim);
    }
    if (a->dtype != b->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "dot : expected both vectors to have same dtype, but found %s and %s",
                             ptl_dtype_legacy_name(a->dtype), ptl_dtype_legacy_name(b->dtype));
    }
    int64_t k = a->sizes[0];
    if (k != b->sizes[0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "inconsistent tensor size, expected tensor [%lld] and src [%lld] to "
                             "have the same number of elements, but got %lld and %lld elements "
                             "respectively",
                             (long long)k, (long long)b->sizes[0], (long long)k,
                             (long long)b->sizes[0]);
    }
    if (a->dtype == PTL_DTYPE_BOOL) {
        return not_implemented("dot", a->dtype);
    }
    if ((res = ptl_empty(0, NULL, a->dtype, a->device)) == NULL) {
        return -1;
    }
    if (op->id == PTL_OP_vdot && ptl_dtype_is_complex(a->dtype)) {
        PtlTensorImpl *cm = as_matrix(res, 1, 1, 1, 1), *am = as_matrix(a, 1, k, 1, a->strides[0]);
        PtlTensorImpl *bm = as_matrix(b, k, 1, b->strides[0], 1);
        int rc = cm && am && bm ? ptl_gemm_complex(cm, am, bm, one, zero, NULL, 1) : -1;
        ptl_xdecref(cm);
        ptl_xdecref(am);
        ptl_xdecref(bm);
        if (rc < 0) {
            ptl_decref(res);
            return -1;
        }
    }
    else if (gemm_views(as_matrix(res, 1, 1, 1, 1), as_matrix(a, 1, k, 1, a->strides[0]),
                        as_matrix(b, k, 1, b->strides[0], 1), one, zero) < 0) {
        ptl_decref(res);
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* ---- composite: outer, matmul ---- */

/* Calls op(t, sizes) for view / reshape / expand (new ref). */
static PtlTensorImpl *
call_sizes(PtlOpId id, PtlTensorImpl *t, int n, const int64_t *sizes)
{
    PtlIValue args[3] = {ptl_iv_tensor(t), ptl_iv_intlist(sizes, n), ptl_iv_bool(0)};
    return ptl_call_tensor(id, args);
}

/* Calls a two-tensor op (new ref). */
static PtlTensorImpl *
call2(PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return ptl_call_tensor(id, args);
}

/* outer(Tensor self, Tensor vec2) -> Tensor:  (n,) x (m,) -> (n, m) = self[:, None] * vec2
 * (through mul, so dtypes promote and bool works, as in PyTorch) */
static int
outer_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *self = s[0].u.t, *vec2 = s[1].u.t, *col, *res;

    if (self->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "outer: Expected 1-D argument self, but got %d-D",
                             self->dim);
    }
    if (vec2->dim != 1) {
        return ptl_error_set(PTL_ERR_RUNTIME, "outer: Expected 1-D argument vec2, but got %d-D",
                             vec2->dim);
    }
    int64_t sizes[2] = {self->sizes[0], 1};
    if ((col = call_sizes(PTL_OP_reshape, self, 2, sizes)) == NULL) {
        return -1;
    }
    res = call2(PTL_OP_mul_Tensor, col, vec2);
    ptl_decref(col);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* t as batch + [rows, cols]: a 1-D t is first reshaped to (rows, cols) (one of them is 1),
 * then expanded (a view; new ref). */
static PtlTensorImpl *
expanded_operand(PtlTensorImpl *t, int nb, const int64_t *batch, int64_t rows, int64_t cols)
{
    int64_t sizes[PTL_MAX_DIMS + 2], flat[2] = {rows, cols};
    PtlTensorImpl *m, *e = NULL;

    if (t->dim == 1) {
        m = call_sizes(PTL_OP_reshape, t, 2, flat);
    }
    else {
        ptl_incref(t);
        m = t;
    }
    memcpy(sizes, batch, (size_t)nb * sizeof(int64_t));
    sizes[nb] = rows;
    sizes[nb + 1] = cols;
    if (m != NULL) {
        e = call_sizes(PTL_OP_expand, m, nb + 2, sizes);
    }
    ptl_xdecref(m);
    return e;
}

/* The product of e1 (batch + [n, k]) and e2 (batch + [k, p]): on the CPU, one gemm over the
 * batch dims as they are (Note [Batched matmul without copies]); elsewhere, or for what
 * bmm refuses (its messages), both flattened to 3-D and multiplied by bmm.  New ref. */
static PtlTensorImpl *
batched_product(PtlTensorImpl *e1, PtlTensorImpl *e2, int nb, const int64_t *batch)
{
    int64_t n = e1->sizes[nb], k = e1->sizes[nb + 1], p = e2->sizes[nb + 1], nbatch = 1;
    int64_t sizes[PTL_MAX_DIMS + 2];
    PtlTensorImpl *b1 = NULL, *b2 = NULL, *prod = NULL;

    /* a conj view goes through bmm, whose Conjugate fallback resolves it (this composite
     * runs above the key, Note [Conjugate views]); so does a thread with a dispatch mode,
     * which sees the bmm PyTorch's matmul calls (Note [Python dispatch key]) */
    if (e1->device.type == PTL_DEVICE_CPU && e2->device.type == PTL_DEVICE_CPU &&
        !(ptl_tls()->included & PTL_KEYSET(PTL_KEY_PYTHON)) &&
        e1->sparse == NULL && e2->sparse == NULL && e1->dtype == e2->dtype &&
        e1->dtype != PTL_DTYPE_BOOL && e2->sizes[nb] == k && !ptl_tensor_is_conj(e1) &&
        !ptl_tensor_is_conj(e2)) {
        memcpy(sizes, batch, (size_t)nb * sizeof(int64_t));
        sizes[nb] = n;
        sizes[nb + 1] = p;
        prod = ptl_empty(nb + 2, sizes, e1->dtype, e1->device);
        if (prod != NULL && ptl_gemm(prod, e1, e2, 1.0, 0.0) < 0) {
            PTL_CLEAR(prod);
        }
        return prod;
    }
    for (int i = 0; i < nb; i++) {
        nbatch *= batch[i];
    }
    int64_t flat1[3] = {nbatch, n, k}, flat2[3] = {nbatch, e2->sizes[nb], p};
    if ((b1 = call_sizes(PTL_OP_reshape, e1, 3, flat1)) != NULL &&
        (b2 = call_sizes(PTL_OP_reshape, e2, 3, flat2)) != NULL) {
        prod = call2(PTL_OP_bmm, b1, b2);
    }
    ptl_xdecref(b1);
    ptl_xdecref(b2);
    return prod;
}

/* Note [Batched matmul without copies]
 * matmul of operands with several batch dims used to flatten them to 3-D for bmm; an
 * attention's q @ k^T and attn @ v (heads split from one [B, T, 3C] projection, then
 * transposed) have batch dims no 3-D view can hold, so the flattening copied each operand
 * (7.6% of the GPT training step).  gemm reads any batch strides (gemm.h), so on the CPU the
 * expanded operands go to it as they are.  The result is a new contiguous tensor either way,
 * as bmm's is. */

/* matmul with a batched side (one operand >= 3-D and the other not folded into mm/mv):
 * (..., n, k) @ (..., k, p) with broadcast batch dims; a 1-D left operand gets a 1
 * prepended and a 1-D right operand a 1 appended, removed from the result again (new ref). */
static PtlTensorImpl *
matmul_batched(PtlTensorImpl *t1, PtlTensorImpl *t2)
{
    PtlTensorImpl *e1 = NULL, *e2 = NULL, *prod = NULL, *res = NULL;
    int d1 = t1->dim, d2 = t2->dim, nb, nd;
    int64_t n = d1 > 1 ? t1->sizes[d1 - 2] : 1, k1 = t1->sizes[d1 - 1];
    int64_t k2 = d2 > 1 ? t2->sizes[d2 - 2] : t2->sizes[0], p = d2 > 1 ? t2->sizes[d2 - 1] : 1;
    int64_t batch[PTL_MAX_DIMS + 2];

    if (ptl_broadcast_shapes(d1 > 2 ? d1 - 2 : 0, t1->sizes, d2 > 2 ? d2 - 2 : 0, t2->sizes,
                             &nb, batch) < 0) {
        return NULL;
    }
    if ((e1 = expanded_operand(t1, nb, batch, n, k1)) == NULL ||
        (e2 = expanded_operand(t2, nb, batch, k2, p)) == NULL ||
        (prod = batched_product(e1, e2, nb, batch)) == NULL) {
        goto error;
    }
    nd = nb;
    if (d1 > 1) {
        batch[nd++] = n;
    }
    if (d2 > 1) {
        batch[nd++] = p;
    }
    res = call_sizes(PTL_OP_view, prod, nd, batch);
error:
    ptl_xdecref(e1);
    ptl_xdecref(e2);
    ptl_xdecref(prod);
    return res;
}

/* matmul(Tensor self, Tensor other) -> Tensor, every case of torch.matmul:
 *   (k,) @ (k,) -> ()                     dot
 *   (n, k) @ (k,) -> (n,)                 mv
 *   (k,) @ (k, p) -> (p,)                 (1, k) @ (k, p) by mm, the 1 removed
 *   (n, k) @ (k, p) -> (n, p)             mm
 *   (..., n, k) @ (k,) or (k, p)          folded: (B*n, k) by mv / mm, then reshaped
 *   otherwise                             broadcast batch + bmm (matmul_batched) */
static int
matmul_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)op;
    (void)ks;
    PtlTensorImpl *t1 = s[0].u.t, *t2 = s[1].u.t, *a = NULL, *prod = NULL, *res = NULL;
    int d1 = t1->dim, d2 = t2->dim;
    int64_t sizes[PTL_MAX_DIMS];

    if (d1 == 0 || d2 == 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "both arguments to matmul need to be at least 1D, but they are "
                             "%dD and %dD",
                             d1, d2);
    }
    if (d1 == 1 && d2 == 1) {
        res = call2(PTL_OP_dot, t1, t2);
    }
    else if (d1 == 2 && d2 == 1) {
        res = call2(PTL_OP_mv, t1, t2);
    }
    else if (d1 == 2 && d2 == 2) {
        res = call2(PTL_OP_mm, t1, t2);
    }
    else if (d1 == 1 && d2 == 2) {
        sizes[0] = 1;
        sizes[1] = t1->sizes[0];
        if ((a = call_sizes(PTL_OP_reshape, t1, 2, sizes)) != NULL &&
            (prod = call2(PTL_OP_mm, a, t2)) != NULL) {
            res = call_sizes(PTL_OP_view, prod, 1, &t2->sizes[1]);
        }
    }
    else if (d1 >= 3 && d2 <= 2) {
        /* fold the batch of t1 into its rows */
        int64_t rows = 1;
        for (int i = 0; i < d1 - 1; i++) {
            rows *= t1->sizes[i];
            sizes[i] = t1->sizes[i];
        }
        int64_t flat[2] = {rows, t1->sizes[d1 - 1]};
        if ((a = call_sizes(PTL_OP_reshape, t1, 2, flat)) != NULL &&
            (prod = call2(d2 == 1 ? PTL_OP_mv : PTL_OP_mm, a, t2)) != NULL) {
            sizes[d1 - 1] = t2->sizes[1 % d2];
            res = call_sizes(PTL_OP_view, prod, d2 == 1 ? d1 - 1 : d1, sizes);
        }
    }
    else {
        res = matmul_batched(t1, t2);
    }
    ptl_xdecref(a);
    ptl_xdecref(prod);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1), addbmm_
 * and addbmm.out: beta * self + alpha * sum over b of (n, k) @ (k, m), as one addmm (addmm_,
 * addmm.out) of (n, b*k) @ (b*k, m): batch1's matrices side by side along k, batch2's stacked,
 * so that the in-place and out= forms write through the GEMM's beta source (Note [Products
 * written in place]).  The dtype checks and messages are addmm's, as in PyTorch, whose
 * addbmm calls addmm_ once per batch. */
static int
addbmm_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlTensorImpl *b1 = s[1].u.t, *b2 = s[2].u.t, *p = NULL, *m1 = NULL, *m2 = NULL, *res = NULL;

    if (b1->dim != 3 || b2->dim != 3) {
        return ptl_error_set(PTL_ERR_RUNTIME, "%s must be a 3D tensor",
                             b1->dim != 3 ? "batch1" : "batch2");
    }
    if (b1->sizes[0] != b2->sizes[0]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "batch1 and batch2 must have same number of batches, got %lld and "
                             "%lld",
                             (long long)b1->sizes[0], (long long)b2->sizes[0]);
    }
    if (b1->sizes[2] != b2->sizes[1]) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Incompatible matrix sizes for bmm (%lldx%lld and %lldx%lld)",
                             (long long)b1->sizes[1], (long long)b1->sizes[2],
                             (long long)b2->sizes[1], (long long)b2->sizes[2]);
    }
    /* PyTorch's addbmm.out copies self into out and accumulates there by addmm_, whose first
     * check is then out's dtype against batch2's */
    if (op->id == PTL_OP_addbmm_out && s[5].u.t->dtype != b2->dtype) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "self and mat2 must have the same dtype, but got %s and %s",
                             ptl_dtype_legacy_name(s[5].u.t->dtype),
                             ptl_dtype_legacy_name(b2->dtype));
    }
    int64_t perm[3] = {1, 0, 2}, f1[2] = {b1->sizes[1], b1->sizes[0] * b1->sizes[2]};
    int64_t f2[2] = {f1[1], b2->sizes[2]};
    if ((p = call_sizes(PTL_OP_permute, b1, 3, perm)) != NULL &&
        (m1 = call_sizes(PTL_OP_reshape, p, 2, f1)) != NULL &&
        (m2 = call_sizes(PTL_OP_reshape, b2, 2, f2)) != NULL) {
        PtlIValue args[6] = {s[0], ptl_iv_tensor(m1), ptl_iv_tensor(m2), s[3], s[4],
                             op->id == PTL_OP_addbmm_out ? s[5] : ptl_iv_none()};
        res = ptl_call_tensor(op->id == PTL_OP_addbmm    ? PTL_OP_addmm
                              : op->id == PTL_OP_addbmm_ ? PTL_OP_addmm_
                                                         : PTL_OP_addmm_out,
                              args);
    }
    ptl_xdecref(p);
    ptl_xdecref(m1);
    ptl_xdecref(m2);
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

/* Note [Products with out_dtype]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * mm, bmm, addmm and baddbmm take an out_dtype in PyTorch 2.13 (their .dtype overloads): the
 * input's own dtype, or float32 for float16 / bfloat16 inputs, whose products then
 * accumulate in float32 and are not rounded back.  PyTorch has CUDA kernels only (its CPU
 * build raises NotImplementedError "Could not run 'aten::mm.dtype' ... 'CPU' backend");
 * here they are composites on every device, so that code written for the GPU runs.  A
 * float16 or bfloat16 product is exact in float32 (11 + 11 significant bits fit in 24), so
 * casting the operands to float32 and multiplying in float32 is the float32-accumulating
 * product itself.  The dtype rule and its texts are PyTorch's meta functions' (mm's text
 * for addmm, bmm's for baddbmm); addmm's and baddbmm's self may have either dtype, as in
 * PyTorch's CUDA kernels.  Operands of two dtypes are left as they are, so that the product
 * raises its own mismatch error. */

/* mm.dtype(self, mat2, out_dtype), bmm.dtype(self, mat2, out_dtype),
 * addmm.dtype(self, mat1, mat2, out_dtype, *, beta, alpha) and baddbmm.dtype(self, batch1,
 * batch2, out_dtype, *, beta, alpha): the product in out_dtype (Note [Products with
 * out_dtype]) */
static int
product_dtype_composite(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    int add = op->id == PTL_OP_addmm_dtype || op->id == PTL_OP_baddbmm_dtype;
    int n = add ? 3 : 2;   /* the tensors; out_dtype follows them, then beta and alpha */
    PtlOpId base = op->id == PTL_OP_mm_dtype    ? PTL_OP_mm
                   : op->id == PTL_OP_bmm_dtype ? PTL_OP_bmm
                   : op->id == PTL_OP_addmm_dtype ? PTL_OP_addmm
                                                  : PTL_OP_baddbmm;
    PtlDtype in = s[n - 2].u.t->dtype, out = s[n].u.dtype;
    int mixed = s[n - 1].u.t->dtype != in;
    PtlIValue args[5];   /* the call's stack: the result replaces args[0] */
    PtlTensorImpl *operands[3], *res = NULL;
    int i, made = 0;

    PTL_CHECK(out == in || (out == PTL_DTYPE_FLOAT32 &&
                            (in == PTL_DTYPE_FLOAT16 || in == PTL_DTYPE_BFLOAT16)),
              PTL_ERR_RUNTIME, "%s",
              base == PTL_OP_mm || base == PTL_OP_addmm
                  ? "out_dtype must be the same as input dtype or fp32 for fp16/bf16 inputs"
                  : "out_dtype only supported for torch.float32 output with float16/bfloat16 "
                    "inputs or same as input dtypes");
    PTL_CHECK(!add || s[0].u.t->dtype == out || s[0].u.t->dtype == in, PTL_ERR_RUNTIME,
              "self dtype must match either out_dtype or %s dtype",
              base == PTL_OP_addmm ? "mat1" : "batch1");
    for (made = 0; made < n; made++) {
        PtlTensorImpl *t = s[made].u.t;
        /* an operand of another dtype becomes a differentiable copy (_to_copy) */
        operands[made] = mixed || t->dtype == out ? (ptl_incref(t), t)
                                                  : ptl_to_copy(t, out, NULL);
        if (operands[made] == NULL) {
            goto error;
        }
        args[made] = ptl_iv_tensor(operands[made]);
    }
    args[n] = add ? s[n + 1] : ptl_iv_none();
    args[n + 1] = add ? s[n + 2] : ptl_iv_none();
    res = ptl_call_tensor(base, args);
error:
    for (i = 0; i < made; i++) {
        ptl_decref(operands[i]);
    }
    if (res == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(res);
    return 0;
}

static const PtlKernelReg linalg_cpu[] = {
    {PTL_OP_mm, PTL_KEY_CPU, mm_cpu},
    {PTL_OP_mm_out, PTL_KEY_CPU, mm_cpu},
    {PTL_OP_bmm, PTL_KEY_CPU, bmm_cpu},
    {PTL_OP_bmm_out, PTL_KEY_CPU, bmm_cpu},
    {PTL_OP_addmm, PTL_KEY_CPU, addmm_cpu},
    {PTL_OP_addmm_, PTL_KEY_CPU, addmm_cpu},
    {PTL_OP_addmm_out, PTL_KEY_CPU, addmm_cpu},
    {PTL_OP_baddbmm, PTL_KEY_CPU, baddbmm_cpu},
    {PTL_OP_baddbmm_, PTL_KEY_CPU, baddbmm_cpu},
    {PTL_OP_baddbmm_out, PTL_KEY_CPU, baddbmm_cpu},
    {PTL_OP_addmv, PTL_KEY_CPU, addmv_cpu},
    {PTL_OP_addmv_, PTL_KEY_CPU, addmv_cpu},
    {PTL_OP_addmv_out, PTL_KEY_CPU, addmv_cpu},
    {PTL_OP_mv, PTL_KEY_CPU, mv_cpu},
    {PTL_OP_dot, PTL_KEY_CPU, dot_cpu},
    {PTL_OP_vdot, PTL_KEY_CPU, dot_cpu},
    {PTL_OP_outer, PTL_KEY_COMPOSITE_IMPLICIT, outer_composite},
    {PTL_OP_matmul, PTL_KEY_COMPOSITE_IMPLICIT, matmul_composite},
    {PTL_OP_addbmm, PTL_KEY_COMPOSITE_IMPLICIT, addbmm_composite},
    {PTL_OP_addbmm_, PTL_KEY_COMPOSITE_IMPLICIT, addbmm_composite},
    {PTL_OP_addbmm_out, PTL_KEY_COMPOSITE_IMPLICIT, addbmm_composite},
    {PTL_OP_mm_dtype, PTL_KEY_COMPOSITE_IMPLICIT, product_dtype_composite},
    {PTL_OP_bmm_dtype, PTL_KEY_COMPOSITE_IMPLICIT, product_dtype_composite},
    {PTL_OP_addmm_dtype, PTL_KEY_COMPOSITE_IMPLICIT, product_dtype_composite},
    {PTL_OP_baddbmm_dtype, PTL_KEY_COMPOSITE_IMPLICIT, product_dtype_composite},
};
PTL_DEFINE_REGISTER(linalg_cpu)
