/* copy_slices.c -- in-place ops on views: CopySlices and AsStridedBackward0.  Mirrors
 * torch/csrc/autograd/functions/tensor.cpp (CopySlices) and the view rebase of
 * torch/csrc/autograd/variable.cpp.
 *
 * Note [CopySlices]
 * ~~~~~~~~~~~~~~~~~
 * `y = x.clone(); y[:, 0].mul_(2)` changes y, so y's history must change too.  The in-place
 * op's node `fn` is recorded as usual, then moved inside a CopySlices node that becomes y's
 * grad_fn.  CopySlices' next edges are y's previous gradient edge followed by fn's edges for
 * its other inputs.  Its backward takes y's gradient, runs fn's formula on the region the view
 * covers (giving the gradient of the view before the op), writes that back into the region
 * and sends the whole to y's previous history; the rest of the region passes unchanged.
 * The view itself gets AsStridedBackward0 over (CopySlices, 0): its gradient scattered into a
 * zero tensor of the base's shape.  Other views of the same base are regenerated lazily
 * from the version counter (Note [View regeneration] in autograd.h).
 * Both backward functions are written with dispatcher ops (as_strided windows of a zero
 * buffer, copy_, clone), so under create_graph they record history of their own: double
 * backward through an in-place op on a view works.  A view of another dtype than its base
 * (real, imag, view_as_real of a complex base, view_as_complex of a real one) is handled on
 * real numbers: the complex side's geometry is view_as_real's, the buffer is real, and the
 * complex gradients go in through view_as_real and come out through view_as_complex. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "autograd.h"

static int64_t
reach(int dim, const int64_t *sizes, const int64_t *strides, int64_t offset)
{
    int64_t end = offset + 1;
    for (int d = 0; d < dim; d++) {
        if (sizes[d] == 0) {
            return offset;
        }
        end += (sizes[d] - 1) * strides[d];
    }
    return end;
}

/* as_strided(buf, geometry) through the dispatcher, conj() of it for a side with the
 * conjugate bit (new ref or NULL); `base` picks the base's geometry, else the view's. */
static PtlTensorImpl *
window(PtlTensorImpl *buf, const PtlViewInfo *v, int base)
{
    PtlIValue a[4] = {ptl_iv_tensor(buf),
                      ptl_iv_intlist(base ? v->base_sizes : v->sizes, base ? v->base_dim : v->dim),
                      ptl_iv_intlist(base ? v->base_strides : v->strides,
                                     base ? v->base_dim : v->dim),
                      ptl_iv_int(base ? v->base_offset : v->offset)};
    PtlTensorImpl *w = ptl_call_tensor(PTL_OP_as_strided, a), *c;
    if (w == NULL || !(base ? v->base_conj : v->conj)) {
        return w;
    }
    PtlIValue b[1] = {ptl_iv_tensor(w)};
    c = ptl_call_tensor(PTL_OP_conj, b);
    ptl_decref(w);
    return c;
}

/* buf[window] = src (src NULL: zeros), through the dispatcher so that, under create_graph,
 * buf's history records the write (a CopySlices of its own).  A complex src of a side kept
 * as real parts is written as view_as_real(src).  0 or -1. */
static int
write_window(PtlTensorImpl *buf, const PtlViewInfo *v, int base, PtlTensorImpl *src)
{
    PtlTensorImpl *w = window(buf, v, base), *r, *parts = NULL;
    if (w == NULL) {
        return -1;
    }
    if (src != NULL && (base ? v->base_parts : v->parts)) {
        PtlIValue p[1] = {ptl_iv_tensor(src)};
        if ((parts = ptl_call_tensor(PTL_OP_view_as_real, p)) == NULL) {
            ptl_decref(w);
            return -1;
        }
        src = parts;
    }
    if (src != NULL) {
        PtlIValue a[3] = {ptl_iv_tensor(w), ptl_iv_tensor(src), ptl_iv_bool(0)};
        r = ptl_call_tensor(PTL_OP_copy_, a);
        ptl_xdecref(parts);
    }
    else {
        PtlIValue a[1] = {ptl_iv_tensor(w)};
        r = ptl_call_tensor(PTL_OP_zero_, a);
    }
    ptl_decref(w);
    if (r == NULL) {
        return -1;
    }
    ptl_decref(r);
    return 0;
}

/* A zero buffer covering v->extent elements (new ref or NULL): real numbers when a side is
 * kept as real parts. */
static PtlTensorImpl *
zero_buffer(const PtlViewInfo *v, const PtlInputMeta *m)
{
    int64_t n = v->extent;
    PtlIValue zero = ptl_iv_int(0);
    PtlDtype dt = v->parts || v->base_parts ? ptl_dtype_to_real(m->dtype) : m->dtype;
    PtlTensorImpl *buf = ptl_empty(1, &n, dt, m->device);
    if (buf != NULL && ptl_fill_scalar(buf, &zero) < 0) {
        PTL_CLEAR(buf);
    }
    return buf;
}

/* A copy of buf's window (new ref or NULL), read back as complex numbers for a side kept
 * as real parts. */
static PtlTensorImpl *
read_window(PtlTensorImpl *buf, const PtlViewInfo *v, int base)
{
    PtlTensorImpl *w = window(buf, v, base), *r;
    if (w == NULL) {
        return NULL;
    }
    PtlIValue a[2] = {ptl_iv_tensor(w), ptl_iv_none()};
    r = ptl_call_tensor(PTL_OP_clone, a);
    ptl_decref(w);
    if (r != NULL && (base ? v->base_parts : v->parts)) {
        PtlIValue c[1] = {ptl_iv_tensor(r)};
        w = ptl_call_tensor(PTL_OP_view_as_complex, c);
        ptl_decref(r);
        r = w;
    }
    return r;
}

/* grads_in[0]: the view's gradient -> grads_out[0]: the base's.  Written with dispatcher
 * ops, so it records history under create_graph (double backward). */
static int
as_strided_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    PtlTensorImpl *buf;
    if (grads_in[0] == NULL || !(n->needs & 1u)) {
        return 0;
    }
    if ((buf = zero_buffer(n->view, &n->input_meta[0])) == NULL) {
        return -1;
    }
    int rc = write_window(buf, n->view, 0, grads_in[0]);
    if (rc == 0 && (grads_out[0] = read_window(buf, n->view, 1)) == NULL) {
        rc = -1;
    }
    ptl_decref(buf);
    return rc;
}

static const PtlNodeKind as_strided_kind = {.name = "AsStridedBackward0",
                                             .apply = as_strided_apply};

/* grads_in[0]: the base's gradient -> grads_out[0]: the base's previous history, [i>0]: the
 * in-place op's other inputs.  The base's gradient is laid out in a buffer with the base's
 * geometry; the view's region is read out of it, run through fn's formula, and written back
 * into a copy of the buffer (a copy, so the buffer the region was read from is never
 * modified: its saved version stays valid for double backward). */
static int
copy_slices_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    PtlNode *fn = n->view->fn;
    PtlTensorImpl *buf = NULL, *res = NULL, *slice = NULL;
    PtlTensorImpl *fn_in[1], *fn_out[PTL_SCHEMA_MAX_ARGS];
    int rc = -1;
    memset(fn_out, 0, sizeof(fn_out));
    if (grads_in[0] == NULL) {
        return 0;
    }
    if ((buf = zero_buffer(n->view, &n->input_meta[0])) == NULL ||
        write_window(buf, n->view, 1, grads_in[0]) < 0 ||
        (slice = read_window(buf, n->view, 0)) == NULL) {
        goto done;
    }
    fn_in[0] = slice;
    if (fn->kind->apply(fn, fn_in, fn_out) < 0) {
        goto done;
    }
    if (n->needs & 1u) {
        PtlIValue a[2] = {ptl_iv_tensor(buf), ptl_iv_none()};
        if ((res = ptl_call_tensor(PTL_OP_clone, a)) == NULL ||
            write_window(res, n->view, 0, fn_out[0]) < 0 ||
            (grads_out[0] = read_window(res, n->view, 1)) == NULL) {
            goto done;
        }
    }
    for (int i = 1; i < n->num_next && i < PTL_SCHEMA_MAX_ARGS; i++) {
        grads_out[i] = fn_out[i];
        fn_out[i] = NULL;
    }
    rc = 0;
done:
    for (int i = 0; i < PTL_SCHEMA_MAX_ARGS; i++) {
        ptl_xdecref(fn_out[i]);
    }
    ptl_xdecref(buf);
    ptl_xdecref(res);
    ptl_xdecref(slice);
    return rc;
}

static const PtlNodeKind copy_slices_kind = {.name = "CopySlices", .apply = copy_slices_apply};

static void
meta_of(PtlInputMeta *m, const PtlTensorImpl *t)
{
    m->dtype = t->dtype;
    m->device = t->device;
    m->dim = t->dim;
    memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim);
}

/* A complex geometry in real units (view_as_real's): sizes + [2], strides * 2 + [1],
 * offset * 2.  0, or -1 when the trailing dim does not fit. */
static int
as_real_parts(int *dim, int64_t *sizes, int64_t *strides, int64_t *offset)
{
    if (*dim == PTL_MAX_DIMS) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "an in-place operation on a view of "
                             "another dtype than its base with %d dims", PTL_MAX_DIMS);
    }
    for (int d = 0; d < *dim; d++) {
        strides[d] *= 2;
    }
    sizes[*dim] = 2;
    strides[*dim] = 1;
    *offset *= 2;
    (*dim)++;
    return 0;
}

static PtlViewInfo *
view_info(const PtlTensorImpl *self, const PtlTensorImpl *base)
{
    PtlViewInfo *v = calloc(1, sizeof(PtlViewInfo));
    if (v == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate an autograd node");
        return NULL;
    }
    v->dim = self->dim;
    memcpy(v->sizes, self->sizes, sizeof(int64_t) * (size_t)self->dim);
    memcpy(v->strides, self->strides, sizeof(int64_t) * (size_t)self->dim);
    v->offset = self->storage_offset;
    v->base_dim = base->dim;
    memcpy(v->base_sizes, base->sizes, sizeof(int64_t) * (size_t)base->dim);
    memcpy(v->base_strides, base->strides, sizeof(int64_t) * (size_t)base->dim);
    v->base_offset = base->storage_offset;
    if (self->dtype != base->dtype &&
        ((ptl_dtype_is_complex(self->dtype) &&
          as_real_parts(&v->dim, v->sizes, v->strides, &v->offset) < 0) ||
         (ptl_dtype_is_complex(base->dtype) &&
          as_real_parts(&v->base_dim, v->base_sizes, v->base_strides, &v->base_offset) < 0))) {
        free(v);
        return NULL;
    }
    v->parts = self->dtype != base->dtype && ptl_dtype_is_complex(self->dtype);
    v->base_parts = self->dtype != base->dtype && ptl_dtype_is_complex(base->dtype);
    v->conj = (uint8_t)ptl_tensor_is_conj(self);
    v->base_conj = (uint8_t)ptl_tensor_is_conj(base);
    int64_t a = reach(v->dim, v->sizes, v->strides, v->offset);
    int64_t b = reach(v->base_dim, v->base_sizes, v->base_strides, v->base_offset);
    v->extent = a > b ? a : b;
    return v;
}

int
ptl_copy_slices_rebase(PtlTensorImpl *self, PtlNode *fn)
{
    PtlTensorImpl *base = self->base;
    PtlNode *cs = NULL, *as = NULL;
    int rc = -1;

    if (fn->num_next > PTL_SCHEMA_MAX_ARGS) {
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "in-place operation on a view with more "
                             "than %d inputs", PTL_SCHEMA_MAX_ARGS);
    }
    if ((cs = ptl_node_new(&copy_slices_kind, 1, fn->num_next)) == NULL ||
        (as = ptl_node_new(&as_strided_kind, 1, 1)) == NULL ||
        (cs->view = view_info(self, base)) == NULL || (as->view = view_info(self, base)) == NULL) {
        goto done;
    }
    /* CopySlices' edges: the base's history, then fn's other inputs (moved out of fn) */
    cs->next[0] = ptl_gradient_edge(base);
    meta_of(&cs->input_meta[0], base);
    cs->needs = cs->next[0].fn != NULL ? 1u : 0u;
    for (int i = 1; i < fn->num_next; i++) {
        cs->next[i] = fn->next[i];
        cs->input_meta[i] = fn->input_meta[i];
        fn->next[i].fn = NULL;
        if (cs->next[i].fn != NULL) {
            cs->needs |= 1u << (i < 31 ? i : 31);
        }
    }
    if (fn->next[0].fn != NULL) {
        ptl_node_decref(fn->next[0].fn);
        fn->next[0].fn = NULL;
    }
    fn->needs |= 1u;   /* CopySlices always wants the gradient of the view before the op */
    ptl_node_incref(fn);
    cs->view->fn = fn;
    fn->copy_slices = cs;
    ptl_set_grad_fn(base, cs, 0);
    /* the view: its gradient reaches the base's new history through its region */
    ptl_node_incref(cs);
    as->next[0].fn = cs;
    as->next[0].input_nr = 0;
    as->needs = 1u;
    meta_of(&as->input_meta[0], base);
    ptl_set_grad_fn(self, as, 0);
    rc = 0;
done:
    if (cs != NULL) {
        ptl_node_decref(cs);
    }
    if (as != NULL) {
        ptl_node_decref(as);
    }
    return rc;
}

PtlNode *
ptl_copy_slices_view_fn(PtlNode *cs)
{
    PtlNode *as = ptl_node_new(&as_strided_kind, 1, 1);
    if (as == NULL) {
        return NULL;
    }
    if ((as->view = malloc(sizeof(PtlViewInfo))) == NULL) {
        ptl_node_decref(as);
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate an autograd node");
        return NULL;
    }
    *as->view = *cs->view;
    as->view->fn = NULL;
    ptl_node_incref(cs);
    as->next[0].fn = cs;
    as->next[0].input_nr = 0;
    as->needs = 1u;
    as->input_meta[0] = cs->input_meta[0];
    return as;
}

/* PyTorch's error for a view made in no_grad or inference mode, or by a multi-output op,
 * modified in place (`indirect`: through its base or a sibling view).  The node is named
 * without its "Backward0" suffix, as PyTorch prints it. */
static int
rebase_error(const PtlTensorImpl *t, int indirect)
{
    const PtlAutogradMeta *m = t->autograd_meta;
    const char *what = indirect ? "its base or another view of its base has been" : "is being";
    const char *suffix = "";
    char name[64] = "", head[320];
    int how = m->view_creation;

    if (m->grad_fn != NULL) {
        const char *full = m->grad_fn->kind->name, *cut = strstr(full, "Backward");
        int len = cut != NULL ? (int)(cut - full) : (int)strlen(full);
        snprintf(name, sizeof(name), "%.*s", len, full);
    }
    if (how == PTL_VIEW_MULTI_OUTPUT && m->grad_fn != NULL) {
        snprintf(head, sizeof(head), "Output %d of %s is a view and %s modified inplace.",
                 m->output_nr, name, what);
    }
    else {
        char prefix[160];
        if (m->grad_fn != NULL) {
            snprintf(prefix, sizeof(prefix),
                     "Output %d of %s is a view of a view which was created in", m->output_nr,
                     name);
        }
        else {
            snprintf(prefix, sizeof(prefix), "A view was created in");
        }
        if (how == PTL_VIEW_INFERENCE) {
            snprintf(head, sizeof(head),
                     "%s inference mode and %s modified inplace in normal mode.", prefix, what);
        }
        else {
            snprintf(head, sizeof(head),
                     "%s no_grad mode and %s modified inplace with grad mode enabled.", prefix,
                     what);
        }
    }
    if (how == PTL_VIEW_MULTI_OUTPUT) {
        suffix = " This view is the output of a function that returns multiple views. Such "
                 "functions do not allow the output views to be modified inplace. You should "
                 "replace the inplace operation by an out-of-place one.";
    }
    else if (how == PTL_VIEW_NO_GRAD) {
        suffix = " Given that this use case is ambiguous and error-prone, it is forbidden. You "
                 "can clarify your code by moving both the view and the inplace either both "
                 "inside the no_grad block (if you don't want the inplace to be tracked) or both "
                 "outside (if you want the inplace to be tracked).";
    }
    else if (how == PTL_VIEW_INFERENCE) {
        suffix = " Given that this use case is ambiguous and error-prone, it is forbidden. You "
                 "can clarify your code by moving both the view and the inplace either both "
                 "inside the inference_mode block (if you don't want the inplace to be tracked) "
                 "or both outside (if you want the inplace to be tracked).";
    }
    return ptl_error_set(PTL_ERR_RUNTIME, "%s%s", head, suffix);
}

int
ptl_view_inplace_error(const PtlTensorImpl *t)
{
    const PtlAutogradMeta *m = t->autograd_meta;
    if (m == NULL || m->view_creation <= PTL_VIEW_DEFAULT) {
        return 0;
    }
    return rebase_error(t, 0);
}

int
ptl_view_refresh(PtlTensorImpl *t)
{
    PtlTensorImpl *base = t->base;
    const PtlAutogradMeta *m = t->autograd_meta;
    PtlEdge e;
    PtlNode *as;
    if (m->view_creation > PTL_VIEW_DEFAULT) {
        return rebase_error(t, 1);
    }
    e = ptl_gradient_edge(base);
    if (e.fn == NULL) {
        return 0;   /* the base has no history to regenerate from */
    }
    if ((as = ptl_node_new(&as_strided_kind, 1, 1)) == NULL ||
        (as->view = view_info(t, base)) == NULL) {
        if (as != NULL) {
            ptl_node_decref(as);
        }
        ptl_node_decref(e.fn);
        return -1;
    }
    as->next[0] = e;
    as->needs = 1u;
    meta_of(&as->input_meta[0], base);
    ptl_set_grad_fn(t, as, 0);
    ptl_node_decref(as);
    return 0;
}
