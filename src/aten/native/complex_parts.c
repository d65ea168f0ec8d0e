/* complex_parts.c -- complex64/complex128 kernels, at the Complex dispatch key, of the pads
 * and of the ops that are linear with real coefficients and whose real kernels compute in
 * the tensor's dtype: the reflection, replication and circular pads and their backwards,
 * unfold's backward, im2col and col2im; and constant_pad_nd.  Mirrors their complex dispatch
 * in ATen/native/ReflectionPad.cpp, ReplicationPadding.cpp, PadNd.cpp, UnfoldBackward.cpp,
 * Im2Col.cpp and Col2Im.cpp.  See Note [Complex dtypes] in complex.c.
 *
 * Note [Complex ops part by part]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Such an op f maps x + iy to f(x) + i f(y), so the kernel runs the real kernel twice, on
 * the real and the imaginary parts (strided views, no copy), and joins the two results with
 * complex().  The real kernels read their input through its strides and check it as they do
 * a real one, so the errors are theirs.  PyTorch instead stamps each kernel for the complex
 * types; a pad is a copy, so the parts' three passes cost time, not accuracy. */
#include "../../c10/error.h"
#include "native.h"

/* op(args) with every complex tensor argument replaced by its real parts, then its
 * imaginary parts; the two results joined as complex(real, imag) */
static int
parts_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *views[PTL_SCHEMA_MAX_ARGS] = {NULL}, *part[2] = {NULL, NULL}, *out = NULL;
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < op->schema.nargs; i++) {
            st[i] = s[i];
            if (s[i].tag == PTL_IV_TENSOR && ptl_dtype_is_complex(s[i].u.t->dtype)) {
                PTL_CLEAR(views[i]);
                if ((views[i] = ptl_call_k(p ? PTL_OP_imag : PTL_OP_real, 1, &s[i])) == NULL) {
                    goto done;
                }
                st[i] = ptl_iv_tensor(views[i]);
            }
        }
        if ((part[p] = ptl_call_tensor((PtlOpId)op->id, st)) == NULL) {
            goto done;
        }
    }
    PtlIValue a[2] = {ptl_iv_tensor(part[0]), ptl_iv_tensor(part[1])};
    out = ptl_call_k(PTL_OP_complex, 2, a);
done:
    for (int i = 0; i < op->schema.nargs; i++) {
        ptl_xdecref(views[i]);
    }
    ptl_xdecref(part[0]);
    ptl_xdecref(part[1]);
    return ptl_kernel_return(s, out);
}

/* constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0): the CPU kernel fills and
 * copies whole elements of any size, a complex value included.  A real self reaches this
 * key with a complex value only: the Complex key's fallback converts it, or raises
 * PyTorch's "value cannot be converted" (the CPU kernel would keep its real part). */
static int
constant_pad_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (!ptl_dtype_is_complex(s[0].u.t->dtype)) {
        return ptl_dispatcher_fallback(PTL_KEY_COMPLEX)(op, ks, s);
    }
    return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
}

#define PARTS(ID) {PTL_OP_##ID, PTL_KEY_COMPLEX, parts_complex}
static const PtlKernelReg complex_parts_kernels[] = {
    PARTS(reflection_pad1d), PARTS(reflection_pad2d), PARTS(reflection_pad3d),
    PARTS(replication_pad1d), PARTS(replication_pad2d), PARTS(replication_pad3d),
    PARTS(_pad_circular),
    PARTS(reflection_pad1d_backward), PARTS(reflection_pad2d_backward),
    PARTS(reflection_pad3d_backward), PARTS(replication_pad1d_backward),
    PARTS(replication_pad2d_backward), PARTS(replication_pad3d_backward),
    PARTS(_pad_circular_backward),
    PARTS(unfold_backward), PARTS(im2col), PARTS(col2im),
    {PTL_OP_constant_pad_nd, PTL_KEY_COMPLEX, constant_pad_complex},
};
#undef PARTS
PTL_DEFINE_REGISTER(complex_parts_kernels)
