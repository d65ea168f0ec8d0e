/* node.c -- nodes, edges, saved variables, autograd metadata, AccumulateGrad.  Mirrors
 * torch/csrc/autograd/{function.cpp, saved_variable.cpp, variable.cpp,
 * functions/accumulate_grad.cpp}.  See Note [Autograd ownership]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c10/debug_counts.h"
#include "../c10/error.h"
#include "../c10/tls.h"
#include "autograd.h"

PtlAutogradHooks ptl_autograd_hooks;
static _Atomic uint64_t sequence_nr;

uint64_t
ptl_next_sequence_nr(void)
{
    return atomic_fetch_add_explicit(&sequence_nr, 1, memory_order_relaxed);
}

uint64_t
ptl_peek_sequence_nr(void)
{
    return atomic_load_explicit(&sequence_nr, memory_order_relaxed);
}

static atomic_int anomaly_mode = 2;   /* bit 0: on; bit 1: check NaN (PyTorch's default) */

int
ptl_anomaly_enabled(void)
{
    return atomic_load_explicit(&anomaly_mode, memory_order_relaxed) & 1;
}

int
ptl_anomaly_check_nan(void)
{
    return (atomic_load_explicit(&anomaly_mode, memory_order_relaxed) & 2) != 0;
}

void
ptl_anomaly_set(int on, int check_nan)
{
    atomic_store_explicit(&anomaly_mode, (on ? 1 : 0) | (check_nan ? 2 : 0), memory_order_relaxed);
}

/* ---- grad mode (Note [Autograd key]: off = the Autograd key is excluded) and inference
 * mode (Note [Inference tensors]: on = grad mode off and the Autograd key excluded even
 * under enable_grad) ---- */

int
ptl_grad_mode_enabled(void)
{
    return ptl_tls()->grad_enabled;
}

void
ptl_grad_mode_set(int on)
{
    PtlLocalState *tls = ptl_tls();
    tls->grad_enabled = on != 0;
    if (on && !tls->inference_mode) {
        tls->excluded &= ~PTL_KEYSET(PTL_KEY_AUTOGRAD);
    }
    else {
        tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
    }
}

int
ptl_inference_mode_enabled(void)
{
    return ptl_tls()->inference_mode;
}

void
ptl_inference_mode_set(int on)
{
    ptl_tls()->inference_mode = on != 0;
    ptl_grad_mode_set(!on);
}

/* ---- metadata ---- */

PtlAutogradMeta *
ptl_autograd_meta(PtlTensorImpl *t, int create)
{
    if (t->autograd_meta != NULL || !create) {
        return t->autograd_meta;
    }
    PtlAutogradMeta *m = calloc(1, sizeof(PtlAutogradMeta));
    if (m == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate autograd metadata");
        return NULL;
    }
    t->autograd_meta = m;
    return m;
}

int
ptl_requires_grad(const PtlTensorImpl *t)
{
    const PtlAutogradMeta *m = t->autograd_meta;
    if (m == NULL) {
        return 0;
    }
    if (m->requires_grad || m->grad_fn != NULL) {
        return 1;
    }
    /* a differentiable view requires grad when its base does (Note [View regeneration]) */
    return m->view_creation != PTL_VIEW_UNKNOWN && t->base != NULL && ptl_requires_grad(t->base);
}

/* whether t is a view whose history predates an in-place op on its storage: it has a
 * grad_fn, or it is a differentiable view whose base has history now */
static inline int
view_is_stale(const PtlTensorImpl *t, const PtlAutogradMeta *m)
{
    if (t->base == NULL || !(t->flags & PTL_TF_IS_VIEW) ||
        atomic_load_explicit(&t->version->version, memory_order_relaxed) == m->view_version) {
        return 0;
    }
    return m->grad_fn != NULL ||
           (m->view_creation != PTL_VIEW_UNKNOWN && ptl_requires_grad(t->base));
}

int
ptl_view_check(PtlTensorImpl *t)
{
    PtlAutogradMeta *m = t->autograd_meta;
    return m != NULL && view_is_stale(t, m) ? ptl_view_refresh(t) : 0;
}

int
ptl_view_mark(PtlTensorImpl *t, PtlViewCreation how, const PtlTensorImpl *from)
{
    PtlAutogradMeta *m = ptl_autograd_meta(t, 1);
    const PtlAutogradMeta *fm = from != NULL && from->base != NULL ? from->autograd_meta : NULL;
    if (m == NULL) {
        return -1;
    }
    /* a view of a view made in no_grad/inference mode or by a multi-output op keeps that
     * restriction (PyTorch's propagate_creation_meta) */
    if (fm != NULL && fm->view_creation > PTL_VIEW_DEFAULT &&
        (how == PTL_VIEW_DEFAULT || fm->view_creation == PTL_VIEW_INFERENCE)) {
        how = (PtlViewCreation)fm->view_creation;
    }
    m->view_creation = how;
    m->view_version = atomic_load_explicit(&t->version->version, memory_order_relaxed);
    return 0;
}

PtlNode *
ptl_grad_fn(const PtlTensorImpl *t)
{
    const PtlAutogradMeta *m = t->autograd_meta;
    if (m != NULL && view_is_stale(t, m) && ptl_view_refresh((PtlTensorImpl *)t) < 0) {
        ptl_error_clear();
    }
    return m ? m->grad_fn : NULL;
}

int
ptl_is_leaf(const PtlTensorImpl *t)
{
    return ptl_grad_fn(t) == NULL;
}

int
ptl_set_requires_grad(PtlTensorImpl *t, int on)
{
    if (on && ptl_tensor_is_inference(t) && !ptl_tls()->inference_mode) {
        return ptl_error_set(PTL_ERR_RUNTIME, "Setting requires_grad=True on inference tensor "
                             "outside InferenceMode is not allowed.");
    }
    if (!ptl_is_leaf(t)) {
        if (on) {
            return 0;
        }
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "you can only change requires_grad flags of leaf variables. If you "
                             "want to use a computed variable in a subgraph that doesn't require "
                             "differentiation use var_no_grad = var.detach().");
    }
    if (on && !ptl_dtype_is_differentiable(t->dtype)) {
        return ptl_error_set(PTL_ERR_RUNTIME,   /* PyTorch's text, complex included */
                             "only Tensors of floating point dtype can require gradients");
    }
    PtlAutogradMeta *m = ptl_autograd_meta(t, on);
    if (m != NULL) {
        m->requires_grad = on != 0;
    }
    return on && m == NULL ? -1 : 0;
}

void
ptl_set_grad_fn(PtlTensorImpl *t, PtlNode *fn, int output_nr)
{
    PtlAutogradMeta *m = ptl_autograd_meta(t, 1);
    if (m == NULL) {
        return;
    }
    if (fn != NULL) {
        ptl_node_incref(fn);
    }
    if (m->grad_fn != NULL) {
        ptl_node_decref(m->grad_fn);
    }
    m->grad_fn = fn;
    m->output_nr = output_nr;
    m->view_version = atomic_load_explicit(&t->version->version, memory_order_relaxed);
    if (fn != NULL) {
        m->requires_grad = 0;
    }
}

static PtlNode *
grad_accumulator(PtlTensorImpl *t)
{
    PtlAutogradMeta *m = ptl_autograd_meta(t, 1);
    if (m == NULL) {
        return NULL;
    }
    if (m->grad_accumulator != NULL) {
        ptl_node_incref(m->grad_accumulator);
        return m->grad_accumulator;
    }
    PtlNode *n = ptl_node_new(&ptl_accumulate_grad_kind, 1, 0);
    if (n == NULL) {
        return NULL;
    }
    n->seq = UINT64_MAX;   /* run as soon as ready, like PyTorch's AccumulateGrad */
    ptl_incref(t);
    n->variable = t;
    m->grad_accumulator = n;
    return n;
}

PtlEdge
ptl_gradient_edge(PtlTensorImpl *t)
{
    PtlEdge e = {NULL, 0};
    PtlAutogradMeta *m = t->autograd_meta;
    if (m == NULL) {
        return e;
    }
    if (view_is_stale(t, m) && ptl_view_refresh(t) < 0) {
        ptl_error_clear();
    }
    if (m->grad_fn != NULL) {
        ptl_node_incref(m->grad_fn);
        e.fn = m->grad_fn;
        e.input_nr = m->output_nr;
    }
    else if (m->requires_grad) {
        e.fn = grad_accumulator(t);
    }
    return e;
}

/* ---- what a tensor's grad keeps alive (Note [Tensor GC] in src/python/tensor_object.c) ---- */

#define CLUSTER_MAX 64
#define CHILDREN_MAX (PTL_SCHEMA_MAX_ARGS + PTL_NODE_MAX_SAVED + 4)

typedef struct Owned {
    void *p;
    int is_node;
    long internal;     /* references held by other members (and t's meta, for the grad) */
    int reachable;     /* kept alive from outside the cluster */
} Owned;

typedef struct Child {
    void *p;
    int is_node;
} Child;

/* The objects o owns: a tensor its view base, grad_fn and grad; a node its next nodes,
 * leaf, saved tensors and (CopySlices) in-place node.  Returns how many (at most CHILDREN_MAX). */
static int
children_of(const Owned *o, Child *c)
{
    int n = 0;
    if (!o->is_node) {
        const PtlTensorImpl *x = o->p;
        const PtlAutogradMeta *m = x->autograd_meta;
        if (x->base != NULL) {
            c[n++] = (Child){x->base, 0};
        }
        if (m != NULL && m->grad_fn != NULL) {
            c[n++] = (Child){m->grad_fn, 1};
        }
        if (m != NULL && m->grad != NULL) {
            c[n++] = (Child){m->grad, 0};
        }
        return n;
    }
    const PtlNode *node = o->p;
    for (int i = 0; i < node->num_next && n < PTL_SCHEMA_MAX_ARGS; i++) {
        if (node->next[i].fn != NULL) {
            c[n++] = (Child){node->next[i].fn, 1};
        }
    }
    if (node->variable != NULL) {
        c[n++] = (Child){node->variable, 0};
    }
    for (int i = 0; i < node->nsaved; i++) {
        if (node->saved[i].data != NULL) {
            c[n++] = (Child){node->saved[i].data, 0};
        }
    }
    if (node->view != NULL && node->view->fn != NULL) {
        c[n++] = (Child){node->view->fn, 1};
    }
    return n;
}

static long
refcnt_of(const Owned *o)
{
    return o->is_node ? atomic_load(&((PtlNode *)o->p)->refcnt)
                      : atomic_load(&((PtlTensorImpl *)o->p)->refcnt);
}

static int
find_owned(const Owned *set, int n, const void *p)
{
    for (int i = 0; i < n; i++) {
        if (set[i].p == p) {
            return i;
        }
    }
    return -1;
}

int
ptl_grad_refs_to(const PtlTensorImpl *t, int exclusive)
{
    const PtlAutogradMeta *m = t->autograd_meta;
    Owned set[CLUSTER_MAX];
    Child c[CHILDREN_MAX];
    int n = 0, refs = 0;

    if (m == NULL || m->grad == NULL) {
        return 0;
    }
    /* everything the grad reaches without passing through t, with the references each
     * member receives from the others */
    set[n++] = (Owned){m->grad, 0, 1, 0};
    for (int i = 0; i < n; i++) {
        int nc = children_of(&set[i], c);
        for (int k = 0; k < nc; k++) {
            int j = c[k].p == t ? -2 : find_owned(set, n, c[k].p);
            if (j == -1) {
                if (n == CLUSTER_MAX) {
                    return exclusive ? 0 : 1;   /* too big to tell: shared, and may reach t */
                }
                set[n] = (Owned){c[k].p, c[k].is_node, 0, 0};
                j = n++;
            }
            if (j >= 0) {
                set[j].internal++;
            }
        }
    }
    /* members with owners outside the cluster stay alive, and so does what they own */
    for (int i = 0; exclusive && i < n; i++) {
        set[i].reachable = refcnt_of(&set[i]) > set[i].internal;
    }
    for (int changed = 1; exclusive && changed;) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            if (!set[i].reachable) {
                continue;
            }
            int nc = children_of(&set[i], c);
            for (int k = 0; k < nc; k++) {
                int j = find_owned(set, n, c[k].p);
                if (j >= 0 && !set[j].reachable) {
                    set[j].reachable = 1;
                    changed = 1;
                }
            }
        }
    }
    if (exclusive && set[0].reachable) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (set[i].reachable) {
            continue;
        }
        int nc = children_of(&set[i], c);
        for (int k = 0; k < nc; k++) {
            refs += c[k].p == t;
        }
    }
    return refs;
}

/* ---- nodes ---- */

PtlNode *
ptl_node_new(const PtlNodeKind *kind, int num_outputs, int num_next)
{
    PtlNode *n = calloc(1, sizeof(PtlNode));
    if (n == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "can't allocate an autograd node");
        return NULL;
    }
    if (num_next > 0) {
        n->next = calloc((size_t)num_next, sizeof(PtlEdge));
        n->input_meta = calloc((size_t)num_next, sizeof(PtlInputMeta));
        if (n->next == NULL || n->input_meta == NULL) {
            free(n->next);
            free(n->input_meta);
            free(n);
            ptl_error_set(PTL_ERR_MEMORY, "can't allocate an autograd node");
            return NULL;
        }
    }
    atomic_init(&n->refcnt, 1);
    n->kind = kind;
    n->seq = ptl_next_sequence_nr();
    n->num_outputs = num_outputs;
    n->num_next = num_next;
    ptl_debug_count(PTL_COUNT_NODE, 1);
    if (!kind->is_accumulate_grad && ptl_anomaly_enabled() &&
        ptl_autograd_hooks.anomaly_record != NULL) {
        ptl_autograd_hooks.anomaly_record(n);
    }
    return n;
}

void
ptl_node_incref(PtlNode *n)
{
    atomic_fetch_add_explicit(&n->refcnt, 1, memory_order_relaxed);
}

/* Drops sv's tensor and its mark on the storage (Note [Saved tensor bytes]). */
static void
saved_clear(PtlSavedVariable *sv)
{
    if (sv->marked != NULL) {
        ptl_storage_unmark_saved(sv->marked);
        ptl_storage_decref(sv->marked);
        sv->marked = NULL;
    }
    PTL_CLEAR(sv->data);
}

void
ptl_node_release_saved(PtlNode *n)
{
    for (int i = 0; i < n->nsaved; i++) {
        saved_clear(&n->saved[i]);
        if (n->saved[i].packed != NULL) {
            ptl_autograd_hooks.free_packed(n->saved[i].packed);
            n->saved[i].packed = NULL;
        }
    }
    n->released = 1;
}

/* Note [Saved tensor hooks]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * Under autograd.graph.saved_tensors_hooks(pack, unpack), a node made by an op or a custom
 * Function hands each tensor it saved to pack once the node is complete, and keeps the result
 * (`packed`) instead of the tensor; unpacking calls unpack(packed).  As in PyTorch, a packed
 * tensor has no version check (the hooks own what is kept), the pack hook must not modify its
 * input in place, and only the innermost hooks apply.  The C layer sees three function
 * pointers; `pack` is non-NULL only while hooks are active, so nodes made outside any hooks
 * pay one NULL test.  One saved tensor can also get its own pair afterwards
 * (SavedTensor.register_hooks, through ptl_saved_pack): `packed` then holds that pair's
 * result, and unpacking goes through the same unpack pointer. */
int
ptl_saved_pack(PtlNode *n, int i, int (*pack)(PtlTensorImpl *t, void **packed, void *ctx),
               void *ctx)
{
    PtlSavedVariable *sv = &n->saved[i];
    if (sv->data == NULL) {
        return 0;
    }
    int64_t version = atomic_load(&sv->data->version->version);
    if (pack(sv->data, &sv->packed, ctx) < 0) {
        return -1;
    }
    if (atomic_load(&sv->data->version->version) != version) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "A saved tensor pack hook is modifying its input in place. "
                             "Tensors provided as input to pack hook cannot be modified by "
                             "in-place operations as this can lead to unexpected "
                             "side-effects. Please open an issue if you need to perform "
                             "in-place operations on the input to a pack hook.");
    }
    saved_clear(sv);
    return 0;
}

static int
pack_with_active_hooks(PtlTensorImpl *t, void **packed, void *ctx)
{
    (void)ctx;
    return ptl_autograd_hooks.pack(t, packed);
}

int
ptl_node_pack_saved(PtlNode *n)
{
    if (ptl_autograd_hooks.pack == NULL) {
        return 0;
    }
    for (int i = 0; i < n->nsaved; i++) {
        if (ptl_saved_pack(n, i, pack_with_active_hooks, NULL) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Frees iteratively: a long chain of nodes (100k ops) must not recurse once per node. */
void
ptl_node_decref(PtlNode *n)
{
    PtlNode *stack_buf[64];
    PtlNode **stack = stack_buf;
    int top = 0, cap = 64;

    if (atomic_fetch_sub_explicit(&n->refcnt, 1, memory_order_acq_rel) != 1) {
        return;
    }
    stack[top++] = n;
    while (top > 0) {
        PtlNode *x = stack[--top];
        for (int i = 0; i < x->num_next; i++) {
            PtlNode *c = x->next[i].fn;
            if (c == NULL ||
                atomic_fetch_sub_explicit(&c->refcnt, 1, memory_order_acq_rel) != 1) {
                continue;
            }
            if (top == cap) {
                PtlNode **bigger = malloc(sizeof(PtlNode *) * (size_t)cap * 2);
                if (bigger == NULL) {
                    continue;   /* leak rather than crash under memory exhaustion */
                }
                memcpy(bigger, stack, sizeof(PtlNode *) * (size_t)cap);
                if (stack != stack_buf) {
                    free(stack);
                }
                stack = bigger;
                cap *= 2;
            }
            stack[top++] = c;
        }
        ptl_node_release_saved(x);
        if (x->variable != NULL) {
            PtlAutogradMeta *m = x->variable->autograd_meta;
            if (m != NULL && m->grad_accumulator == x) {
                m->grad_accumulator = NULL;
            }
            ptl_decref(x->variable);
        }
        if (x->py_state != NULL && ptl_autograd_hooks.free_state != NULL) {
            ptl_autograd_hooks.free_state(x->py_state);
        }
        if (x->py_trace != NULL && ptl_autograd_hooks.free_trace != NULL) {
            ptl_autograd_hooks.free_trace(x->py_trace);
        }
        if (x->view != NULL) {
            if (x->view->fn != NULL) {
                x->view->fn->copy_slices = NULL;
                ptl_node_decref(x->view->fn);
            }
            free(x->view);
        }
        free(x->arg_lists);
        free(x->next);
        free(x->input_meta);
        ptl_debug_count(PTL_COUNT_NODE, -1);
        free(x);
    }
    if (stack != stack_buf) {
        free(stack);
    }
}

/* ---- saved variables ---- */

int
ptl_saved_check(const PtlTensorImpl *t)
{
    if (t != NULL && ptl_tensor_is_inference(t) && !ptl_tls()->inference_mode) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "Inference tensors cannot be saved for backward. Please do not use "
                             "Tensors created in inference mode in computation tracked by "
                             "autograd. To work around this, you can make a clone to get a normal "
                             "tensor and use it in autograd, or use `torch.no_grad()` instead of "
                             "`torch.inference_mode()`.");
    }
    return 0;
}

PtlTensorImpl *
ptl_detach_below_autograd(PtlTensorImpl *t)
{
    PtlLocalState *tls = ptl_tls();
    const PtlDispatchKeySet excluded = tls->excluded;
    PtlIValue a[1] = {ptl_iv_tensor(t)};
    tls->excluded |= PTL_KEYSET(PTL_KEY_AUTOGRAD);
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP_detach, a);
    tls->excluded = excluded;
    return r;
}

void
ptl_saved_set(PtlNode *n, int i, PtlTensorImpl *t, int is_output, int output_nr)
{
    PtlSavedVariable *sv = &n->saved[i];
    sv->defined = 1;
    sv->is_output = is_output;
    sv->output_nr = output_nr;
    if (t == NULL) {
        return;
    }
    /* Note [In-place provenance] */
    t->version->saved = 1;
    if (n->site == NULL && ptl_autograd_hooks.site != NULL) {
        n->site = ptl_autograd_hooks.site();
    }
    const PtlAutogradMeta *m = t->autograd_meta;
    sv->producer = is_output ? n->kind->name : (m && m->grad_fn ? m->grad_fn->kind->name : NULL);
    sv->producer_output_nr = is_output ? output_nr : (m ? m->output_nr : 0);
    sv->version = atomic_load(&t->version->version);
    if (is_output && (t->keys & PTL_KEYSET(PTL_KEY_PYTHON))) {
        /* its subclass's detach(), which keeps the Python object (Note [Python tensors]);
         * that object has a version counter of its own */
        sv->data = ptl_detach_below_autograd(t);
        if (sv->data == NULL) {
            ptl_error_clear();
        }
        else {
            sv->version = atomic_load(&sv->data->version->version);
        }
    }
    else if (is_output) {
        /* an alias that shares the version counter but neither owns the output nor has
         * autograd metadata: no cycle through our own grad_fn (Note [Version counter]) */
        sv->data = ptl_tensor_impl_alias(t);
        if (sv->data == NULL) {
            ptl_error_clear();
        }
    }
    else {
        ptl_incref(t);
        sv->data = t;
    }
    if (sv->data != NULL && sv->data->storage != NULL) {
        sv->marked = sv->data->storage;
        ptl_storage_incref(sv->marked);
        ptl_storage_mark_saved(sv->marked);
    }
    if (i >= n->nsaved) {
        n->nsaved = i + 1;
    }
}

/* "torch.FloatTensor [2, 3]" */
static void
format_type(const PtlTensorImpl *t, char *buf, size_t n)
{
    char sizes[128];
    snprintf(buf, n, "torch.%sTensor %s", ptl_dtype_legacy_name(t->dtype),
             ptl_format_sizes(sizes, sizeof(sizes), t->dim, t->sizes));
}

/* "\nThe tensor was saved by XBackward0 at f.py:3 and modified in place by aten::add_ at
 * f.py:4." (the parts that are known), see Note [In-place provenance]. */
static void
format_provenance(const PtlNode *n, const PtlVersionCounter *vc, int64_t now, char *buf,
                  size_t size)
{
    int off = snprintf(buf, size, "\nThe tensor was saved by %s%s%s", n->kind->name,
                       n->site ? " at " : "", n->site ? n->site : "");
    if (vc->inplace_op != NULL && vc->inplace_version == now && (size_t)off < size) {
        off += snprintf(buf + off, size - (size_t)off, " and modified in place by %s%s%s",
                        vc->inplace_op, vc->inplace_site ? " at " : "",
                        vc->inplace_site ? vc->inplace_site : "");
    }
    if ((size_t)off < size) {
        snprintf(buf + off, size - (size_t)off, ".");
    }
}

/* A saved output t (STOLEN) as unpack returns it: under grad mode (create_graph) a fresh
 * alias carrying the output's history, else t itself.  NULL with *err set on failure. */
static PtlTensorImpl *
saved_output(PtlNode *n, const PtlSavedVariable *sv, PtlTensorImpl *t, int *err)
{
    if (!ptl_grad_mode_enabled()) {
        return t;
    }
    PtlTensorImpl *a = ptl_tensor_impl_alias(t);
    ptl_decref(t);
    if (a == NULL) {
        *err = 1;
        return NULL;
    }
    /* the output of an in-place op on a view is that view, whose history goes through
     * the CopySlices that took the op's node (Note [CopySlices]) */
    PtlNode *fn = n->copy_slices != NULL ? ptl_copy_slices_view_fn(n->copy_slices) : n;
    if (fn == NULL) {
        ptl_decref(a);
        *err = 1;
        return NULL;
    }
    ptl_set_grad_fn(a, fn, n->copy_slices != NULL ? 0 : sv->output_nr);
    if (fn != n) {
        ptl_node_decref(fn);
    }
    return a;
}

PtlTensorImpl *
ptl_saved_unpack(PtlNode *n, int i, int *err)
{
    PtlSavedVariable *sv = &n->saved[i];
    *err = 0;
    if (n->released) {
        *err = 1;
        ptl_error_set(PTL_ERR_RUNTIME,
                      "Trying to backward through the graph a second time (or directly access "
                      "saved tensors after they have already been freed). Saved intermediate "
                      "values of the graph are freed when you call .backward() or "
                      "autograd.grad(). Specify retain_graph=True if you need to backward "
                      "through the graph a second time or if you need to access saved tensors "
                      "after calling backward.");
        return NULL;
    }
    if (sv->packed != NULL) {
        PtlTensorImpl *t = ptl_autograd_hooks.unpack(sv->packed);
        if (t == NULL) {
            *err = 1;
            return NULL;
        }
        return sv->is_output ? saved_output(n, sv, t, err) : t;
    }
    if (sv->data == NULL) {
        return NULL;
    }
    int64_t now = atomic_load(&sv->data->version->version);
    if (now != sv->version) {
        char type[160], which[96] = "", where[640];
        *err = 1;
        format_type(sv->data, type, sizeof(type));
        /* PyTorch names a saved input's current grad_fn, a saved output's own node, without
         * the "Backward0" suffix */
        const PtlAutogradMeta *m = sv->data->autograd_meta;
        const PtlNode *current = sv->is_output ? NULL : ptl_grad_fn(sv->data);   /* refreshed */
        const char *name = sv->is_output ? sv->producer : (current ? current->kind->name : NULL);
        if (name != NULL) {
            const char *b = strstr(name, "Backward");
            int len = (int)strlen(name);
            if (b != NULL && strspn(b + 8, "0123456789") == strlen(b + 8)) {
                len = (int)(b - name);
            }
            snprintf(which, sizeof(which), ", which is output %d of %.*s,",
                     sv->is_output ? sv->producer_output_nr : m->output_nr, len, name);
        }
        format_provenance(n, sv->data->version, now, where, sizeof(where));
        ptl_error_set(PTL_ERR_RUNTIME,
                      "one of the variables needed for gradient computation has been modified "
                      "by an inplace operation: [%s]%s is at version %lld; expected version "
                      "%lld instead. Hint: %s%s",
                      type, which, (long long)now, (long long)sv->version,
                      ptl_anomaly_enabled()
                          ? "the backtrace further above shows the operation that failed to "
                            "compute its gradient. The variable in question was changed in "
                            "there or anywhere later. Good luck!"
                          : "enable anomaly detection to find the operation that failed to "
                            "compute its gradient, with torch.autograd.set_detect_anomaly(True, "
                            "check_nan=False).",
                      where);
        return NULL;
    }
    ptl_incref(sv->data);
    return sv->is_output ? saved_output(n, sv, sv->data, err) : sv->data;
}

/* ---- AccumulateGrad ---- */

/* Note [Gradient layout contract]
 * A .grad that AccumulateGrad creates has its variable's strides when the variable is dense
 * and non-overlapping, and is contiguous otherwise (PyTorch's obeys_layout_contract and
 * clone_obey_contract).  An incoming gradient already laid out so is stolen when nobody else
 * holds it; any other is copied into that layout.  The optimizers' fused steps and the
 * in-place accumulation of later backwards then meet operands of one layout, not a
 * transposed gradient against a contiguous parameter. */
static void
grad_layout(const PtlTensorImpl *var, int64_t *strides)
{
    if (ptl_tensor_impl_dense_strides(var, strides)) {
        return;
    }
    int64_t st = 1;
    for (int d = var->dim - 1; d >= 0; d--) {
        strides[d] = st;
        st *= var->sizes[d] > 1 ? var->sizes[d] : 1;
    }
}

static int
obeys_layout(const PtlTensorImpl *g, const int64_t *strides)
{
    for (int d = 0; d < g->dim; d++) {
        if (g->sizes[d] > 1 && g->strides[d] != strides[d]) {
            return 0;
        }
    }
    return 1;
}

/* A copy of g laid out as strides say.  New ref or NULL. */
static PtlTensorImpl *
copy_into_layout(PtlTensorImpl *g, const int64_t *strides)
{
    PtlTensorImpl *c = ptl_empty_strided(g->dim, g->sizes, strides, g->dtype, g->device);
    if (c == NULL) {
        return NULL;
    }
    PtlIValue a[3] = {ptl_iv_tensor(c), ptl_iv_tensor(g), ptl_iv_bool(0)};
    PtlTensorImpl *r = ptl_call_tensor(PTL_OP_copy_, a);
    if (r == NULL) {
        ptl_decref(c);
        return NULL;
    }
    ptl_decref(r);
    return c;
}

static int
accumulate_grad_apply(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out)
{
    (void)grads_out;
    PtlTensorImpl *var = n->variable, *g = grads_in[0];
    PtlAutogradMeta *m = ptl_autograd_meta(var, 1);
    if (g == NULL || m == NULL) {
        return m == NULL ? -1 : 0;
    }
    if (g->dim != var->dim || memcmp(g->sizes, var->sizes, sizeof(int64_t) * (size_t)g->dim)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "AccumulateGrad: the gradient's shape does not match the leaf's");
    }
    if (m->grad == NULL) {
        int64_t strides[PTL_MAX_DIMS];
        if (ptl_grad_mode_enabled()) {
            ptl_incref(g);   /* create_graph: .grad keeps g's history */
            m->grad = g;
            return 0;
        }
        if (g->keys & PTL_KEYSET(PTL_KEY_PYTHON)) {   /* as PyTorch's, through the subclass */
            m->grad = ptl_detach_below_autograd(g);
            return m->grad == NULL ? -1 : 0;
        }
        if (g->sparse != NULL) {
            PtlIValue a[2] = {ptl_iv_tensor(g), ptl_iv_none()};
            m->grad = ptl_call_tensor(PTL_OP_clone, a);
            return m->grad == NULL ? -1 : 0;
        }
        grad_layout(var, strides);
        if (atomic_load(&g->refcnt) == 1 && g->dtype == var->dtype && obeys_layout(g, strides) &&
            ptl_grad_fn(g) == NULL) {
            ptl_incref(g);   /* nobody else holds this buffer: steal it */
            m->grad = g;
            return 0;
        }
        m->grad = copy_into_layout(g, strides);
        return m->grad == NULL ? -1 : 0;
    }
    /* a sparse .grad meeting a dense gradient becomes their dense sum, out of place */
    int dense_sum = m->grad->sparse != NULL && g->sparse == NULL;
    PtlTensorImpl *first = dense_sum ? g : m->grad, *second = dense_sum ? m->grad : g;
    PtlIValue a[3] = {ptl_iv_tensor(first), ptl_iv_tensor(second), ptl_iv_int(1)};
    if (ptl_grad_mode_enabled() || dense_sum) {   /* create_graph: keeps the history */
        PtlTensorImpl *s = ptl_call_tensor(PTL_OP_add_Tensor, a);
        if (s == NULL) {
            return -1;
        }
        ptl_decref(m->grad);
        m->grad = s;
        return 0;
    }
    PtlTensorImpl *s = ptl_call_tensor(PTL_OP_add__Tensor, a);
    if (s == NULL) {
        return -1;
    }
    ptl_decref(s);
    return 0;
}

const PtlNodeKind ptl_accumulate_grad_kind = {.name = "AccumulateGrad",
                                               .apply = accumulate_grad_apply,
                                               .is_accumulate_grad = 1};

/* ---- C post-accumulate-grad hooks (Note [C post-accumulate-grad hooks]) ---- */

static _Atomic int64_t post_acc_hook_ids = 1;

int64_t
ptl_post_acc_grad_hook_add(PtlTensorImpl *leaf, PtlPostAccGradFn fn, void *ctx,
                           void (*free_ctx)(void *ctx))
{
    PtlAutogradMeta *m = ptl_autograd_meta(leaf, 1);
    PtlPostAccGradHook *h = m != NULL ? malloc(sizeof(PtlPostAccGradHook)) : NULL;
    if (h == NULL) {
        return m == NULL ? -1 : ptl_error_set(PTL_ERR_MEMORY, "out of memory for a hook");
    }
    h->fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    h->id = atomic_fetch_add_explicit(&post_acc_hook_ids, 1, memory_order_relaxed);
    h->next = NULL;
    PtlPostAccGradHook **tail = &m->post_acc_hooks;
    while (*tail != NULL) {
        tail = &(*tail)->next;
    }
    *tail = h;
    return h->id;
}

static void
hook_free(PtlPostAccGradHook *h)
{
    if (h->free_ctx != NULL) {
        h->free_ctx(h->ctx);
    }
    free(h);
}

/* Unlinks and frees the hooks whose fn is NULL (removed while the engine ran them). */
static void
hooks_sweep(PtlAutogradMeta *m)
{
    PtlPostAccGradHook **link = &m->post_acc_hooks;
    while (*link != NULL) {
        PtlPostAccGradHook *h = *link;
        if (h->fn == NULL) {
            *link = h->next;
            hook_free(h);
        }
        else {
            link = &h->next;
        }
    }
}

int
ptl_post_acc_grad_hook_remove(PtlTensorImpl *leaf, int64_t id)
{
    PtlAutogradMeta *m = leaf->autograd_meta;
    for (PtlPostAccGradHook **link = m ? &m->post_acc_hooks : NULL; link && *link;
         link = &(*link)->next) {
        PtlPostAccGradHook *h = *link;
        if (h->id != id || h->fn == NULL) {
            continue;
        }
        if (m->post_acc_running) {
            h->fn = NULL;   /* the engine's pass frees it when it is done */
        }
        else {
            *link = h->next;
            hook_free(h);
        }
        return 1;
    }
    return 0;
}

int
ptl_post_acc_grad_hooks_run(PtlTensorImpl *leaf)
{
    PtlAutogradMeta *m = leaf->autograd_meta;
    if (m == NULL || m->post_acc_hooks == NULL) {
        return 0;
    }
    int rc = 0;
    m->post_acc_running++;
    for (PtlPostAccGradHook *h = m->post_acc_hooks; h != NULL && rc == 0; h = h->next) {
        if (h->fn != NULL) {
            rc = h->fn(h->ctx, leaf);
        }
    }
    if (--m->post_acc_running == 0) {
        hooks_sweep(m);
    }
    return rc;
}

void
ptl_post_acc_grad_hooks_free(PtlAutogradMeta *m)
{
    while (m->post_acc_hooks != NULL) {
        PtlPostAccGradHook *h = m->post_acc_hooks;
        m->post_acc_hooks = h->next;
        hook_free(h);
    }
}
