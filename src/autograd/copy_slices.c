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
 * zero tensor of the base's shape.  Other views of the same base keep their old grad_fn
 * (PyTorch regenerates them lazily from the version counter; pytorchlite does not yet).
 * These backward formulas use kernels directly, so they are not themselves differentiable. */
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

/* A zero buffer covering info->extent elements, and the base-shaped and view-shaped windows
 * into it.  0 or -1. */
static int
windows(const PtlViewInfo *v, const PtlInputMeta *m, PtlTensorImpl **buf, PtlTensorImpl **base,
        PtlTensorImpl **view)
{
    int64_t n = v->extent;
    PtlIValue zero = ptl_iv_int(0);
    *buf = *base = *view = NULL;
    if ((*buf = ptl_empty(1, &n, m->dtype, m->device)) == NULL ||
        ptl_fill_scalar(*buf, &zero) < 0 ||
        (*base = ptl_tensor_impl_view(*buf, v->base_dim, v->base_sizes, v->base_strides,
                                      v->base_offset)) == NULL ||
        (*view = ptl_tensor_impl_view(*buf, v->dim, v->sizes, v->strides, v->offset)) == NULL) {
        PTL_CLEAR(*buf);
        PTL_CLEAR(*base);
        return -1;
    }
    return 0;
}

/* grads_in[0]: the view's gradient -> grads_out[0]: the base's */
static int
as_strided_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    PtlTensorImpl *buf, *base, *view;
    if (grads_in[0] == NULL || !(n->needs & 1u)) {
        return 0;
    }
    if (windows(n->view, &n->input_meta[0], &buf, &base, &view) < 0) {
        return -1;
    }
    int rc = ptl_copy_into(view, grads_in[0]);
    if (rc == 0 && (grads_out[0] = ptl_contiguous(base)) == NULL) {
        rc = -1;
    }
    ptl_decref(buf);
    ptl_decref(base);
    ptl_decref(view);
    return rc;
}

static const PtlNodeKind as_strided_kind = {"AsStridedBackward0", as_strided_apply, 0};

/* grads_in[0]: the base's gradient -> grads_out[0]: the base's previous history, [i>0]: the
 * in-place op's other inputs. */
static int
copy_slices_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    PtlNode *fn = n->view->fn;
    PtlTensorImpl *buf = NULL, *base = NULL, *view = NULL, *slice = NULL;
    PtlTensorImpl *fn_in[1], *fn_out[PTL_SCHEMA_MAX_ARGS];
    int rc = -1;
    memset(fn_out, 0, sizeof(fn_out));
    if (grads_in[0] == NULL) {
        return 0;
    }
    if (windows(n->view, &n->input_meta[0], &buf, &base, &view) < 0 ||
        ptl_copy_into(base, grads_in[0]) < 0 ||
        (slice = ptl_cast(view, view->dtype)) == NULL) {
        goto done;
    }
    fn_in[0] = slice;
    if (fn->kind->apply(fn, fn_in, fn_out) < 0) {
        goto done;
    }
    if (fn_out[0] != NULL) {
        if (ptl_copy_into(view, fn_out[0]) < 0) {
            goto done;
        }
    }
    else {
        PtlIValue zero = ptl_iv_int(0);
        if (ptl_fill_scalar(view, &zero) < 0) {
            goto done;
        }
    }
    if ((n->needs & 1u) && (grads_out[0] = ptl_contiguous(base)) == NULL) {
        goto done;
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
    ptl_xdecref(base);
    ptl_xdecref(view);
    ptl_xdecref(slice);
    return rc;
}

static const PtlNodeKind copy_slices_kind = {"CopySlices", copy_slices_apply, 0};

static void
meta_of(PtlInputMeta *m, const PtlTensorImpl *t)
{
    m->dtype = t->dtype;
    m->device = t->device;
    m->dim = t->dim;
    memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim);
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
