/* complex_norm.c -- the norms of complex64/complex128 tensors, whose results are real:
 * linalg_vector_norm and norm (Tensor.norm, torch.norm), as Complex-key kernels (Note [Complex
 * dtypes] in complex.c), and renorm, which scales complex slices by them; pdist and cdist's
 * kernels refuse complex tensors as PyTorch's do.  Mirrors the complex path of
 * linalg_vector_norm (ATen/native/LinearAlgebra.cpp), renorm (Normalization.cpp) and
 * Distance.cpp.  The var / std family of complex tensors: complex_reduce.c.
 *
 * Note [Complex norms]
 * ~~~~~~~~~~~~~~~~~~~~
 * - A norm of z is the real kernel's norm of |z| (complex.c's abs: cabs, so |3e300 + 4e300 j|
 *   is 5e300), in z's precision (float32 for complex64).  The sums of |z|^p can overflow (or
 *   underflow to 0) where the norm itself does not; where the result is inf or 0 and the
 *   slice's largest |z| is finite and positive, the slice's norm is computed again from
 *   |z| / max |z| and scaled back by max |z| (LAPACK's nrm2 scales likewise), so the 2-norm of
 *   [3e300 + 4e300 j, 3e300 + 4e300 j] is 7.07e300 (PyTorch's is inf; its norm of one element
 *   is exact).  Finite p only: 0 and +-inf neither sum nor overflow.
 * The derivatives are the real rows (NormBackward, LinalgVectorNormBackward0), whose formulas
 * hold for complex inputs with sgn for sign (Note [Complex autograd]). */
#include <math.h>
#include <string.h>

#include "../../c10/error.h"
#include "linalg_impl.h"
#include "native.h"

/* The keys below Complex: the real kernels */
#define BELOW_COMPLEX(KS) ((KS) & ptl_keyset_below(PTL_KEY_COMPLEX))

/* op(args) redispatched with ks; its first result (a new reference), or NULL */
static PtlTensorImpl *
redispatch_tensor(PtlDispatchKeySet ks, PtlOpId id, PtlIValue *args)
{
    return ptl_dispatcher_redispatch(ptl_op(id), ks, args) < 0 ? NULL : args[0].u.t;
}

static PtlTensorImpl *
redispatch1(PtlDispatchKeySet ks, PtlOpId id, PtlTensorImpl *a)
{
    PtlIValue args[1] = {ptl_iv_tensor(a)};
    return redispatch_tensor(ks, id, args);
}

static PtlTensorImpl *
redispatch2(PtlDispatchKeySet ks, PtlOpId id, PtlTensorImpl *a, PtlTensorImpl *b)
{
    PtlIValue args[2] = {ptl_iv_tensor(a), ptl_iv_tensor(b)};
    return redispatch_tensor(ks, id, args);
}

/* amax(a, dims, keepdim) below Complex (dims [] reduces every dim) */
static PtlTensorImpl *
amax_of(PtlDispatchKeySet ks, PtlTensorImpl *a, const PtlIValue *dims, int keepdim)
{
    PtlIValue args[3] = {ptl_iv_tensor(a), *dims, ptl_iv_bool(keepdim)};
    return redispatch_tensor(BELOW_COMPLEX(ks), PTL_OP_amax, args);
}

/* 1 when the norm r (float32 or float64, contiguous) has an element that is inf or 0 */
static int
needs_rescale(const PtlTensorImpl *r)
{
    const char *d = ptl_tensor_data((PtlTensorImpl *)r);
    for (int64_t i = 0; i < r->numel; i++) {
        double v = r->dtype == PTL_DTYPE_FLOAT32 ? ((const float *)d)[i] : ((const double *)d)[i];
        if (v == 0 || isinf(v)) {
            return 1;
        }
    }
    return 0;
}

/* r[i] = scaled[i] * m[i] where r[i] is inf or 0 and m[i] is finite and positive (r, scaled
 * and m of one shape and dtype, contiguous) */
static void
rescale_into(PtlTensorImpl *r, const PtlTensorImpl *scaled, const PtlTensorImpl *m)
{
    char *rd = ptl_tensor_data(r);
    const char *sd = ptl_tensor_data((PtlTensorImpl *)scaled);
    const char *md = ptl_tensor_data((PtlTensorImpl *)m);
    for (int64_t i = 0; i < r->numel; i++) {
        if (r->dtype == PTL_DTYPE_FLOAT32) {
            float v = ((float *)rd)[i], mx = ((const float *)md)[i];
            if ((v == 0 || isinf(v)) && isfinite(mx) && mx > 0) {
                ((float *)rd)[i] = ((const float *)sd)[i] * mx;
            }
        }
        else {
            double v = ((double *)rd)[i], mx = ((const double *)md)[i];
            if ((v == 0 || isinf(v)) && isfinite(mx) && mx > 0) {
                ((double *)rd)[i] = ((const double *)sd)[i] * mx;
            }
        }
    }
}

/* The real norm op (linalg_vector_norm or norm) of a = |z| on the stack s (s[0] = a,
 * borrowed; the order p; dims at s[idim] (None: every dim); keepdim), with the rescaling of
 * Note [Complex norms].  The result in s[0]; 0 or -1. */
static int
norm_of_abs(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, double p, int idim,
            int keepdim)
{
    PtlTensorImpl *a = s[0].u.t, *r, *mk = NULL, *mo = NULL, *q = NULL, *rq = NULL;
    PtlIValue saved[PTL_SCHEMA_MAX_ARGS];
    memcpy(saved, s, sizeof(PtlIValue) * (size_t)op->schema.nargs);
    if (ptl_dispatcher_redispatch(op, BELOW_COMPLEX(ks), s) < 0) {
        return -1;
    }
    r = s[0].u.t;
    if (a->numel == 0 || p == 0 || isinf(p) || isnan(p) || !needs_rescale(r)) {
        return 0;
    }
    PtlIValue dims = idim < 0 || saved[idim].tag == PTL_IV_NONE ? ptl_iv_intlist(NULL, 0)
                                                                 : saved[idim];
    if ((mk = amax_of(ks, a, &dims, 1)) == NULL || (mo = amax_of(ks, a, &dims, keepdim)) == NULL ||
        (q = redispatch2(BELOW_COMPLEX(ks), PTL_OP_div_Tensor, a, mk)) == NULL) {
        goto error;
    }
    saved[0] = ptl_iv_tensor(q);
    if (ptl_dispatcher_redispatch(op, BELOW_COMPLEX(ks), saved) < 0) {
        goto error;
    }
    rq = saved[0].u.t;
    rescale_into(r, rq, mo);
    ptl_decref(rq);
    ptl_decref(q);
    ptl_decref(mo);
    ptl_decref(mk);
    return 0;
error:
    ptl_xdecref(q);
    ptl_xdecref(mo);
    ptl_xdecref(mk);
    ptl_decref(r);
    return -1;
}

/* linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *,
 * ScalarType? dtype=None) -> Tensor
 * norm.Scalar(Tensor self, Scalar p=2) -> Tensor
 * norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor
 * complex self: [*] -> the reduced shape, real: the real op on |self| (self first converted
 * to vector_norm's complex dtype) */
static int
norm_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *x, *a;
    int full = op->id == PTL_OP_norm_Scalar, vector = op->id == PTL_OP_linalg_vector_norm;
    PtlIValue none = ptl_iv_none();
    if (s[1].tag == PTL_IV_COMPLEX) {
        return ptl_error_set(PTL_ERR_RUNTIME, "linalg.vector_norm: Expected a non-complex "
                             "scalar as the order of norm.");
    }
    if (!ptl_dtype_is_complex(self->dtype)) {
        return ptl_dispatcher_redispatch(op, BELOW_COMPLEX(ks), s);
    }
    if (ptl_linalg_refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    if ((x = ptl_vector_norm_input(BELOW_COMPLEX(ks), self, vector ? &s[4] : &none)) == NULL) {
        return -1;
    }
    a = redispatch1(ks, PTL_OP_abs, x);
    ptl_decref(x);
    if (a == NULL) {
        return -1;
    }
    PtlIValue args[5] = {ptl_iv_tensor(a), s[1], full ? none : s[2], full ? none : s[3], none};
    double p = s[1].tag == PTL_IV_NONE ? 2.0 : ptl_iv_to_double(&s[1]);
    int rc = norm_of_abs(op, ks, args, p, full ? -1 : 2, !full && s[3].u.b);
    ptl_decref(a);
    if (rc < 0) {
        return -1;
    }
    s[0] = args[0];
    return 0;
}

/* renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor (and renorm_): PyTorch's
 * checks of complex Scalars, then the real kernel's composite with the Complex key, whose
 * norm is complex_norm's and whose factor, of the norm's real dtype, scales self */
static int
renorm_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (s[1].tag == PTL_IV_COMPLEX) {
        return ptl_error_set(PTL_ERR_RUNTIME, "renorm: p must be real-valued");
    }
    if (s[3].tag == PTL_IV_COMPLEX) {
        return ptl_error_set(PTL_ERR_RUNTIME, ptl_iv_to_double(&s[1]) > 0
                             ? "renorm: maxnorm must be real-valued"
                             : "renorm: non-positive-norm not supported");
    }
    if (ptl_linalg_refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    return ptl_renorm_cpu(op, ks, s);
}

/* _pdist_forward(Tensor self, float p=2) -> Tensor of a complex self [N, M]: PyTorch's
 * kernel refuses complex values, after its layout check and its results that need none:
 * empty for N < 2, zeros [N (N - 1) / 2] for M = 0 */
static int
pdist_forward_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *self = s[0].u.t, *out;
    if (ptl_linalg_refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    if (!ptl_tensor_is_contiguous(self)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "_pdist_forward requires contiguous input");
    }
    if (self->dim == 0) {
        return ptl_error_set(PTL_ERR_INDEX, "Dimension specified as 0 but tensor has no "
                             "dimensions");
    }
    if (self->dim == 1 && self->sizes[0] > 1) {   /* size(1) is read for 2 rows or more */
        return ptl_error_set(PTL_ERR_INDEX, "Dimension out of range (expected to be in range "
                             "of [-1, 0], but got 1)");
    }
    int64_t n = self->sizes[0], pairs = n >= 2 ? n * (n - 1) / 2 : 0;
    if (n >= 2 && self->sizes[1] > 0) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "\"pdist\" not implemented for '%s'",
                             ptl_dtype_legacy_name(self->dtype));
    }
    if ((out = ptl_empty(1, &pairs, self->dtype, self->device)) == NULL) {
        return -1;
    }
    memset(ptl_tensor_data(out), 0, (size_t)pairs * ptl_tensor_itemsize(out));
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* _cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor with a complex
 * operand: PyTorch's checks, in its order, end in its refusal of complex dtypes */
static int
cdist_forward_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (ptl_linalg_refuse_cuda(op, ks, s) < 0) {
        return -1;
    }
    return ptl_cdist_check(s[0].u.t, s[1].u.t);
}

static const PtlKernelReg complex_norm_kernels[] = {
    {PTL_OP_linalg_vector_norm, PTL_KEY_COMPLEX, norm_complex},
    {PTL_OP_norm_Scalar, PTL_KEY_COMPLEX, norm_complex},
    {PTL_OP_norm_ScalarOpt_dim, PTL_KEY_COMPLEX, norm_complex},
    {PTL_OP_renorm, PTL_KEY_COMPLEX, renorm_complex},
    {PTL_OP_renorm_, PTL_KEY_COMPLEX, renorm_complex},
    {PTL_OP__pdist_forward, PTL_KEY_COMPLEX, pdist_forward_complex},
    {PTL_OP__cdist_forward, PTL_KEY_COMPLEX, cdist_forward_complex},
};
PTL_DEFINE_REGISTER(complex_norm_kernels)
