/* complex_parts.c -- complex64/complex128 kernels made of the real kernels run on the parts
 * of their complex tensors.  Mirrors the complex paths of Embedding.cpp, Im2Col.cpp,
 * Col2Im.cpp, AffineGridGenerator.cpp and SummaryOps.cpp (bincount), and of the pads
 * (ReflectionPad.cpp, ReplicationPadding.cpp, PadNd.cpp, UnfoldBackward.cpp, below).  See
 * Note [Complex dtypes] in complex.c.
 *
 * Note [Complex ops by parts]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * An op that is linear over the reals in its one complex tensor (embedding's weight, the
 * gradient of embedding's backward, col2im's input and im2col's off the CPU,
 * affine_grid_generator's theta and its backward's gradient) is the complex tensor of the op
 * on the real part and the op on the imaginary part: two calls of the real kernel on strided
 * views of the parts, then complex(re, im).  Its other tensors (indices) are real.  embedding of a contiguous
 * weight runs once instead, on the [V, 2D] real view whose rows hold each row's parts.
 * convolution is bilinear in input and weight: conv1d/2d/3d and conv_transpose1d/2d/3d
 * compute a complex one from three real convolutions of the parts, as PyTorch's
 * complex_convolution does (_convolution in nn/_functional_conv.py), and aten::convolution
 * and its backward refuse complex tensors with PyTorch's messages (conv.c).
 * linspace and logspace with a complex start, end or dtype: the linspace of the starts' and
 * ends' parts, joined (logspace then raises base to it, complex pow); a real dtype with a
 * complex end point refuses as PyTorch's does.
 * bincount reads complex weights as PyTorch does: their real parts, in double.
 * As PyTorch's, embedding and affine_grid_generator refuse to record a complex gradient
 * (the autograd kernel's throw_error_for_complex_autograd).
 * The real kernels run with the Autograd key excluded: the autograd kernel above records the
 * op itself. */
#include <string.h>

#include "../../c10/error.h"
#include "../../c10/tls.h"
#include "native.h"

/* ---- the parts, through the dispatcher below Autograd ---- */

/* complex(re, im): a new reference; steals re and im */
static PtlTensorImpl *
join_parts(PtlTensorImpl *re, PtlTensorImpl *im)
{
    PtlTensorImpl *out = NULL;
    if (re != NULL && im != NULL) {
        PtlIValue v[2] = {ptl_iv_tensor(re), ptl_iv_tensor(im)};
        out = ptl_call_k(PTL_OP_complex, 2, v);
    }
    ptl_xdecref(re);
    ptl_xdecref(im);
    return out;
}

/* op(args) with every complex tensor argument replaced by its real part, then by its
 * imaginary part; the two results joined as complex(real, imag) in s[0].  0 or -1. */
static int
run_on_parts(const PtlOperator *op, PtlIValue *s)
{
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *views[PTL_SCHEMA_MAX_ARGS] = {NULL}, *part[2] = {NULL, NULL}, *out = NULL;
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < op->schema.nargs; i++) {
            st[i] = s[i];
            if (s[i].tag == PTL_IV_TENSOR && s[i].u.t != NULL &&
                ptl_dtype_is_complex(s[i].u.t->dtype)) {
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

/* ---- ops linear in their one complex tensor ---- */

static int
linear_by_parts(const PtlOperator *op, PtlIValue *s)
{
    int k = -1;
    for (int i = 0; i < op->schema.nargs; i++) {
        if (s[i].tag == PTL_IV_TENSOR && s[i].u.t != NULL &&
            ptl_dtype_is_complex(s[i].u.t->dtype)) {
            if (k >= 0) {   /* complex indices and the like */
                return ptl_dtype_not_implemented(op, s[i].u.t->dtype);
            }
            k = i;
        }
    }
    if (k < 0) {   /* a complex Scalar only: the real kernel's own refusal */
        return ptl_dtype_not_implemented(op, PTL_DTYPE_COMPLEX64);
    }
    return run_on_parts(op, s);
}

/* embedding(weight, indices, ...) of a contiguous [V, D] complex weight: one real embedding of
 * its [V, 2D] real view (a row's parts are adjacent), viewed back as [*, D] complex; 0 when
 * the weight is not laid out so (linear_by_parts then runs). */
static int
embedding_pairs(const PtlOperator *op, PtlIValue *s, int *rc)
{
    PtlTensorImpl *w = s[0].u.t, *r = NULL, *rows = NULL, *e = NULL, *pairs = NULL;
    if (w->dim != 2 || !ptl_tensor_is_contiguous(w)) {
        return 0;
    }
    int64_t flat[2] = {w->sizes[0], 2 * w->sizes[1]}, sizes[PTL_MAX_DIMS + 2];
    PtlIValue a[1] = {ptl_iv_tensor(w)};
    PtlIValue st[PTL_SCHEMA_MAX_ARGS];
    *rc = -1;
    if ((r = ptl_call_k(PTL_OP_view_as_real, 1, a)) != NULL) {
        PtlIValue v[2] = {ptl_iv_tensor(r), ptl_iv_intlist(flat, 2)};
        rows = ptl_call_k(PTL_OP_view, 2, v);
    }
    if (rows != NULL) {
        memcpy(st, s, sizeof(PtlIValue) * (size_t)op->schema.nargs);
        st[0] = ptl_iv_tensor(rows);
        e = ptl_call_tensor(PTL_OP_embedding, st);
    }
    if (e != NULL) {   /* [*, 2D] -> [*, D, 2] */
        memcpy(sizes, e->sizes, sizeof(int64_t) * (size_t)e->dim);
        sizes[e->dim - 1] = w->sizes[1];
        sizes[e->dim] = 2;
        PtlIValue v[2] = {ptl_iv_tensor(e), ptl_iv_intlist(sizes, e->dim + 1)};
        pairs = ptl_call_k(PTL_OP_view, 2, v);
    }
    if (pairs != NULL) {
        PtlIValue c[1] = {ptl_iv_tensor(pairs)};
        PtlTensorImpl *out = ptl_call_k(PTL_OP_view_as_complex, 1, c);
        if (out != NULL) {
            s[0] = ptl_iv_tensor(out);
            *rc = 0;
        }
    }
    ptl_xdecref(r);
    ptl_xdecref(rows);
    ptl_xdecref(e);
    ptl_xdecref(pairs);
    return 1;
}

/* bincount(self, weights, minlength) with complex weights: the real parts in double, with
 * the conversion's warning */
static int
bincount_weights(PtlIValue *s)
{
    PtlTensorImpl *w = ptl_cast(s[1].u.t, PTL_DTYPE_FLOAT64);
    if (w == NULL) {
        return -1;
    }
    PtlIValue st[3] = {s[0], ptl_iv_tensor(w), s[2]};
    PtlTensorImpl *out = ptl_call_tensor(PTL_OP_bincount, st);
    ptl_decref(w);
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* ---- linspace, logspace ---- */

/* linspace(start, end, steps, *, dtype, layout, device, pin_memory) and logspace(start, end,
 * steps, base, *, dtype, ...): the result dtype is `dtype`, else the default dtype's complex
 * one (a complex start or end brought the call here). */
static int
linspace_parts(const PtlOperator *op, PtlIValue *s)
{
    int log = op->id == PTL_OP_logspace, di = log ? 4 : 3;
    int complex_ends = ptl_iv_imag(&s[0]) != 0 || ptl_iv_imag(&s[1]) != 0 ||
                       s[0].tag == PTL_IV_COMPLEX || s[1].tag == PTL_IV_COMPLEX;
    PtlDtype inferred = complex_ends ? ptl_dtype_to_complex(ptl_default_dtype())
                                     : ptl_default_dtype();
    PtlDtype dt = s[di].tag == PTL_IV_DTYPE ? s[di].u.dtype : inferred;
    if (!ptl_dtype_is_complex(dt)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "torch.%s(): inferred dtype %s can't be safely "
                             "cast to passed dtype %s", log ? "logspace" : "linspace",
                             ptl_dtype_cpp_name(inferred), ptl_dtype_legacy_name(dt));
    }
    PtlTensorImpl *r[2] = {NULL, NULL};
    for (int j = 0; j < 2; j++) {   /* the real parts, then the imaginary ones (logspace: the
                                     * exponents' parts) */
        PtlIValue lin[7] = {
            ptl_iv_double(j == 0 ? ptl_iv_to_double(&s[0]) : ptl_iv_imag(&s[0])),
            ptl_iv_double(j == 0 ? ptl_iv_to_double(&s[1]) : ptl_iv_imag(&s[1])), s[2],
            ptl_iv_dtype(ptl_dtype_to_real(dt)), s[di + 1], s[di + 2], s[di + 3]};
        if ((r[j] = ptl_call_tensor(PTL_OP_linspace, lin)) == NULL) {
            ptl_xdecref(r[0]);
            return -1;
        }
    }
    PtlTensorImpl *out = join_parts(r[0], r[1]);
    if (out != NULL && log) {
        PtlIValue pw[2] = {s[3], ptl_iv_tensor(out)};
        PtlTensorImpl *e = out;
        out = ptl_call_k(PTL_OP_pow_Scalar, 2, pw);
        ptl_decref(e);
    }
    if (out == NULL) {
        return -1;
    }
    s[0] = ptl_iv_tensor(out);
    return 0;
}

/* The Complex key's kernel of every op here: the parts' calls run below Autograd. */
static int
parts_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    PtlLocalState *tls = ptl_tls();
    const PtlDispatchKeySet excluded = tls->excluded;
    int rc;
    tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
    switch (op->id) {
    case PTL_OP_linspace:
    case PTL_OP_logspace: rc = linspace_parts(op, s); break;
    case PTL_OP_bincount:
        rc = s[1].tag == PTL_IV_TENSOR && ptl_dtype_is_complex(s[1].u.t->dtype)
                 ? bincount_weights(s)
                 : ptl_dtype_not_implemented(op, s[0].u.t->dtype);
        break;
    case PTL_OP_embedding:
        if (!embedding_pairs(op, s, &rc)) {
            rc = linear_by_parts(op, s);
        }
        break;
    default: rc = linear_by_parts(op, s); break;
    }
    tls->excluded = excluded;
    return rc;
}

static const PtlKernelReg complex_parts_kernels[] = {
    {PTL_OP_embedding, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_embedding_dense_backward, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_col2im, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_affine_grid_generator, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_affine_grid_generator_backward, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_bincount, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_linspace, PTL_KEY_COMPLEX, parts_complex},
    {PTL_OP_logspace, PTL_KEY_COMPLEX, parts_complex},
};
PTL_DEFINE_REGISTER(complex_parts_kernels)

/* ---- the pads, im2col and unfold's backward ---- */

/* unfold_backward is linear in its gradient as the ops above (Note [Complex ops by parts]):
 * every complex argument is replaced by its part.  The pads on the CPU move or add whole
 * complex elements instead (moves_complex). */

/* The Complex key's kernel of unfold_backward: run_on_parts. */
static int
each_part_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    (void)ks;
    return run_on_parts(op, s);
}

/* The pads, their backwards and im2col: on the CPU the real kernel itself, whose gather
 * moves whole complex elements (Note [Gathers by runs] in resample_gather.c, conv.c's
 * im2col_plane: one pass instead of two over strided part views and a join) and whose
 * backward adds them (Note [Pad backward by input rows]); elsewhere by parts. */
static int
moves_complex(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (s[0].u.t->device.type == PTL_DEVICE_CPU) {
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_COMPLEX), s);
    }
    return run_on_parts(op, s);
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

#define PARTS(ID) {PTL_OP_##ID, PTL_KEY_COMPLEX, each_part_complex}
#define MOVES(ID) {PTL_OP_##ID, PTL_KEY_COMPLEX, moves_complex}
static const PtlKernelReg complex_pad_kernels[] = {
    MOVES(reflection_pad1d), MOVES(reflection_pad2d), MOVES(reflection_pad3d),
    MOVES(replication_pad1d), MOVES(replication_pad2d), MOVES(replication_pad3d),
    MOVES(_pad_circular), MOVES(im2col),
    MOVES(reflection_pad1d_backward), MOVES(reflection_pad2d_backward),
    MOVES(reflection_pad3d_backward), MOVES(replication_pad1d_backward),
    MOVES(replication_pad2d_backward), MOVES(replication_pad3d_backward),
    MOVES(_pad_circular_backward),
    PARTS(unfold_backward),
    {PTL_OP_constant_pad_nd, PTL_KEY_COMPLEX, constant_pad_complex},
};
#undef PARTS
#undef MOVES
PTL_DEFINE_REGISTER(complex_pad_kernels)
