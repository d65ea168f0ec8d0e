/* conjugate.c -- the Conjugate dispatch key's fallback: conj() as a view with a conjugate
 * bit.  Mirrors ATen/ConjugateFallback.cpp and ATen/native/MathBitsFallback.h.
 *
 * Note [Conjugate views]
 * ~~~~~~~~~~~~~~~~~~~~~~
 * x.conj() of a complex x is a view of x's memory whose key set holds Conjugate (c10's
 * ptl_tensor_is_conj): its values are the conjugates of what its memory holds, so conj()
 * and x.mH cost no pass over the data, and a write through the view lands in x,
 * conjugated.  conj() of a conj view clears the bit; conj() of a real tensor is an alias.
 * The key sits above Complex and below CompositeImplicit (Note [Dispatch key order]), so a
 * composite op has decomposed before it is reached and every kernel below it sees plain
 * tensors.  Its fallback, for a call with a conj argument:
 *   - view ops (a schema return `Tensor(a)` aliasing an input, without `!`) fall through,
 *     and their output carries self's bit (a complex one; real() of a conj view is the real
 *     part of its memory, without the bit).  When such an op copied instead (reshape or
 *     contiguous of a layout that is not viewable) the copy is dropped and the call redone
 *     on the resolved input, so a kernel that copied raw memory never leaks it.
 *     view_as_real and view(dtype) refuse with PyTorch's messages.  imag() of a conj view
 *     returns the imaginary parts of the resolved tensor, a copy: PyTorch returns a view with
 *     a negative bit there, which this library does not have;
 *   - resize_, resize_as_ and set_ change self's geometry, not its values: they fall
 *     through, keeping the bit;
 *   - every other op gets each conj tensor argument (a list's elements too) replaced by its
 *     resolved copy.  A mutable argument (`Tensor(a!)`: in-place ops, out=) is resolved into
 *     a temporary, the op runs on it, conj(temporary) is written back into the argument's
 *     memory through an alias without the bit, and the op returns the argument itself.
 * resolve_conj() and conj_physical() are written in Python over conj and conj_physical.
 * Every reader of tensor memory outside the dispatcher (item, tolist, the buffer protocol,
 * numpy(), DLPack, storages, serialization) resolves or refuses as PyTorch does; the list is
 * in docs/decisions.md (complex dtypes).  Autograd sees conj as the view op its schema declares
 * (Note [View regeneration]); CopySlices conjugates a conj view's gradient window
 * (autograd/copy_slices.c). */
#include <stdlib.h>
#include <string.h>

#include "../../c10/error.h"
#include "native.h"

/* Keys of t for a call below Conjugate. */
static PtlDispatchKeySet
keys_below(const PtlTensorImpl *t)
{
    return t->keys & ptl_keyset_below(PTL_KEY_CONJUGATE);
}

/* An alias of t's memory and geometry without the bit (new ref or NULL). */
static PtlTensorImpl *
memory_alias(PtlTensorImpl *t)
{
    PtlTensorImpl *a = ptl_tensor_impl_alias(t);
    if (a != NULL) {
        a->keys &= ~PTL_KEYSET(PTL_KEY_CONJUGATE);
    }
    return a;
}

/* conj_physical(t) for a bit-free t, below Conjugate (new ref or NULL) */
static PtlTensorImpl *
conj_values(PtlTensorImpl *t)
{
    PtlIValue a[1] = {ptl_iv_tensor(t)};
    if (ptl_dispatcher_redispatch(ptl_op(PTL_OP_conj_physical), keys_below(t), a) < 0) {
        return NULL;
    }
    return a[0].u.t;
}

/* A new tensor holding t's values (t conj): its memory conjugated.  New ref or NULL. */
static PtlTensorImpl *
resolve(PtlTensorImpl *t)
{
    PtlTensorImpl *raw = memory_alias(t), *r;
    if (raw == NULL) {
        return NULL;
    }
    r = conj_values(raw);
    ptl_decref(raw);
    return r;
}

/* Writes the values of tmp (a resolved temporary of conj t, which the op modified) back
 * into t: conj(tmp) into t's memory.  0 or -1. */
static int
write_back(PtlTensorImpl *t, PtlTensorImpl *tmp)
{
    PtlTensorImpl *raw = NULL, *c = NULL;
    int rc = -1;
    if (tmp->dim != t->dim ||
        memcmp(tmp->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim) != 0) {
        if (ptl_tensor_impl_resize(t, tmp->dim, tmp->sizes) < 0) {   /* out= resized */
            return -1;
        }
    }
    if ((raw = memory_alias(t)) != NULL && (c = conj_values(tmp)) != NULL) {
        PtlIValue a[3] = {ptl_iv_tensor(raw), ptl_iv_tensor(c), ptl_iv_bool(0)};
        if (ptl_dispatcher_redispatch(ptl_op(PTL_OP_copy_), keys_below(raw), a) == 0) {
            ptl_decref(a[0].u.t);
            rc = 0;
        }
    }
    ptl_xdecref(raw);
    ptl_xdecref(c);
    return rc;
}

int
ptl_conj_memory(PtlTensorImpl *t)
{
    PtlTensorImpl *raw = memory_alias(t), *c = NULL;
    int rc = raw != NULL && (c = conj_values(raw)) != NULL ? ptl_copy_into(raw, c) : -1;
    ptl_xdecref(raw);
    ptl_xdecref(c);
    return rc;
}

static int
is_conj_arg(const PtlIValue *v)
{
    if (v->tag == PTL_IV_TENSOR) {
        return ptl_tensor_is_conj(v->u.t);
    }
    for (int64_t j = 0; v->tag == PTL_IV_TENSORLIST && j < v->u.tl.n; j++) {
        if (v->u.tl.data[j] != NULL && ptl_tensor_is_conj(v->u.tl.data[j])) {
            return 1;
        }
    }
    return 0;
}

/* The resolved call: see the Note.  tmp[i] / lists[i] hold argument i's resolved tensor or
 * its list with resolved elements, orig[i] the argument as the caller passed it. */
static int
resolving_call(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const PtlSchema *sc = &op->schema;
    PtlIValue orig[PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *tmp[PTL_SCHEMA_MAX_ARGS] = {NULL};
    PtlTensorImpl **lists[PTL_SCHEMA_MAX_ARGS] = {NULL};
    int rc = -1;
    memcpy(orig, s, sizeof(PtlIValue) * (size_t)sc->nargs);
    for (int i = 0; i < sc->nargs; i++) {
        if (!((op->tensor_args >> i) & 1u) || !is_conj_arg(&s[i])) {
            continue;
        }
        if (s[i].tag == PTL_IV_TENSOR) {
            if ((tmp[i] = resolve(s[i].u.t)) == NULL) {
                goto done;
            }
            s[i].u.t = tmp[i];
            continue;
        }
        int64_t n = s[i].u.tl.n;
        if ((lists[i] = calloc((size_t)n, sizeof(PtlTensorImpl *))) == NULL) {
            ptl_error_set(PTL_ERR_MEMORY, "can't allocate a tensor list");
            goto done;
        }
        for (int64_t j = 0; j < n; j++) {
            PtlTensorImpl *e = s[i].u.tl.data[j];
            lists[i][j] = e != NULL && ptl_tensor_is_conj(e) ? resolve(e) : e;
            if (lists[i][j] == NULL && e != NULL) {
                goto done;
            }
            if (lists[i][j] == e && e != NULL) {
                ptl_incref(e);
            }
        }
        s[i].u.tl.data = lists[i];
    }
    if (ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_CONJUGATE), s) < 0) {
        memcpy(s, orig, sizeof(PtlIValue) * (size_t)sc->nargs);
        goto done;
    }
    rc = 0;
    for (int i = 0; i < sc->nargs && rc == 0; i++) {
        if (!sc->args[i].alias_write) {
            continue;
        }
        if (tmp[i] != NULL) {
            rc = write_back(orig[i].u.t, tmp[i]);
        }
        for (int64_t j = 0; lists[i] != NULL && j < orig[i].u.tl.n && rc == 0; j++) {
            if (lists[i][j] != orig[i].u.tl.data[j]) {
                rc = write_back(orig[i].u.tl.data[j], lists[i][j]);
            }
        }
    }
    /* a mutable argument comes back as itself, not as its temporary */
    for (int r = 0; r < sc->nrets; r++) {
        for (int i = 0; s[r].tag == PTL_IV_TENSOR && i < sc->nargs; i++) {
            if (tmp[i] != NULL && s[r].u.t == tmp[i] && sc->args[i].alias_write) {
                ptl_incref(orig[i].u.t);
                ptl_decref(tmp[i]);
                s[r].u.t = orig[i].u.t;
            }
        }
    }
    if (rc < 0) {
        for (int r = 0; r < sc->nrets; r++) {
            ptl_ivalue_release(&s[r]);
        }
    }
done:
    for (int i = 0; i < sc->nargs; i++) {
        ptl_xdecref(tmp[i]);
        for (int64_t j = 0; lists[i] != NULL && j < orig[i].u.tl.n; j++) {
            ptl_xdecref(lists[i][j]);
        }
        free(lists[i]);
    }
    return rc;
}

/* Whether every tensor among the outputs shares self's memory (a view, not a copy). */
static int
outputs_alias(const PtlOperator *op, const PtlIValue *s, const PtlTensorImpl *self)
{
    for (int r = 0; r < op->schema.nrets; r++) {
        const PtlIValue *v = &s[r];
        if (v->tag == PTL_IV_TENSOR && v->u.t->storage != self->storage) {
            return 0;
        }
        for (int64_t j = 0; v->tag == PTL_IV_TENSORLIST && j < v->u.tl.n; j++) {
            if (v->u.tl.data[j] != NULL && v->u.tl.data[j]->storage != self->storage) {
                return 0;
            }
        }
    }
    return 1;
}

static void
set_bit(PtlTensorImpl *t, int conj)
{
    t->keys &= ~PTL_KEYSET(PTL_KEY_CONJUGATE);
    if (conj && ptl_dtype_is_complex(t->dtype)) {
        t->keys |= PTL_KEYSET(PTL_KEY_CONJUGATE);
    }
}

/* A view op: falls through, its outputs get self's bit (see the Note). */
static int
view_call(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, int self_index)
{
    PtlTensorImpl *self = s[self_index].u.t;
    PtlIValue orig[PTL_SCHEMA_MAX_ARGS];
    int conj = ptl_tensor_is_conj(self) && op->id != PTL_OP_real;
    memcpy(orig, s, sizeof(PtlIValue) * (size_t)op->schema.nargs);
    ptl_incref(self);   /* the outputs overwrite its slot */
    if (ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_CONJUGATE), s) < 0) {
        ptl_decref(self);
        return -1;
    }
    if (!outputs_alias(op, s, self)) {   /* it copied: redo it on resolved values */
        for (int r = 0; r < op->schema.nrets; r++) {
            ptl_ivalue_release(&s[r]);
        }
        memcpy(s, orig, sizeof(PtlIValue) * (size_t)op->schema.nargs);
        ptl_decref(self);
        return resolving_call(op, ks, s);
    }
    ptl_decref(self);
    if (op->id == PTL_OP_conj) {   /* its kernel flipped the bit */
        return 0;
    }
    for (int r = 0; r < op->schema.nrets; r++) {
        if (s[r].tag == PTL_IV_TENSOR) {
            set_bit(s[r].u.t, conj);
        }
        for (int64_t j = 0; s[r].tag == PTL_IV_TENSORLIST && j < s[r].u.tl.n; j++) {
            if (s[r].u.tl.data[j] != NULL) {
                set_bit(s[r].u.tl.data[j], conj);
            }
        }
    }
    return 0;
}

/* The index of the argument a view op's first return aliases, or -1 when op is no view op. */
static int
view_self(const PtlOperator *op, const PtlIValue *s)
{
    const PtlSchema *sc = &op->schema;
    if (sc->nrets == 0 || sc->inplace || sc->rets[0].alias_set == 0 || sc->rets[0].alias_write) {
        return -1;
    }
    for (int i = 0; i < sc->nargs; i++) {
        if (sc->args[i].alias_set == sc->rets[0].alias_set && s[i].tag == PTL_IV_TENSOR) {
            return i;
        }
    }
    return -1;
}

static int
conj_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const int id = op->id;
    if (id == PTL_OP_resize_ || id == PTL_OP_resize_as_ || id == PTL_OP_set__source_Tensor) {
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_CONJUGATE), s);
    }
    /* to_dense of a strided tensor returns an alias of it (PyTorch's returns self), so it
     * passes as a view; with another dtype it copies and view_call resolves */
    int self = id == PTL_OP_to_dense ? 0 : view_self(op, s);
    if (self >= 0 && ptl_tensor_is_conj(s[self].u.t)) {
        if (id == PTL_OP_view_as_real) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "view_as_real doesn't work on unresolved conjugated tensors.  "
                                 "To resolve the conjugate tensor so you can view it as real, "
                                 "use self.resolve_conj(); however, be warned that the "
                                 "resulting tensor will NOT alias the original.");
        }
        if (id == PTL_OP_view_dtype) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "torch.Tensor.view is not supported for conjugate view tensors "
                                 "when converting to a different dtype.");
        }
        if (id != PTL_OP_imag) {
            return view_call(op, ks, s, self);
        }
    }
    return resolving_call(op, ks, s);
}

/* Registers the Conjugate fallback (native.def). */
int
ptl_register_conjugate_fallback(void)
{
    ptl_dispatcher_register_fallback(PTL_KEY_CONJUGATE, conj_fallback);
    return 0;
}
