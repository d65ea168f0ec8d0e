/* engine.c -- runs backward over the graph.  Mirrors torch/csrc/autograd/engine.cpp.
 *
 * Note [Engine]
 * ~~~~~~~~~~~~~
 * 1. Discover every node reachable from the roots (iterative DFS, no recursion: a 100k-node
 *    chain must not overflow the C stack) and count, per node, the edges coming into it.
 * 2. Seed the roots' input buffers with the root gradients.
 * 3. Run ready nodes (all incoming gradients arrived) newest first (max-heap on the sequence
 *    number, as PyTorch breaks ties); each node's outputs are summed into its children's
 *    input buffers, and a child whose count reaches zero becomes ready.
 * 4. Without retain_graph, a node frees its saved tensors after it ran, so a second backward
 *    raises PyTorch's "backward through the graph a second time" error.
 * autograd.grad captures the buffers of the inputs' gradient edges instead of accumulating
 * into .grad, and only runs nodes on a path to one of them.
 * The engine runs on the calling thread with grad mode = create_graph.  Under a profiler each
 * node is two events, its evaluation and its formula (Note [Profiler] in profiler.h). */
#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "autograd.h"
#include "formula.h"
#include "profiler.h"

typedef struct Slot {
    PtlNode *node;               /* borrowed (the graph holds it) */
    PtlTensorImpl **buf;         /* owned grads, [num_outputs] */
    int deps;
    int needed;                  /* autograd.grad: this node leads to an input */
    int visited_children;
} Slot;

typedef struct Graph {
    uint64_t gen;
    Slot *slots;
    int n, cap;
    int *heap;                   /* slot indices, max-heap on seq */
    int nheap;
} Graph;

static _Atomic uint64_t generation = 1;

static int
graph_slot(Graph *g, PtlNode *node, int *is_new)
{
    *is_new = 0;
    if (node->engine_gen == g->gen) {
        return node->engine_index;
    }
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        Slot *s = realloc(g->slots, sizeof(Slot) * (size_t)cap);
        if (s == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
        }
        g->slots = s;
        g->cap = cap;
    }
    Slot *s = &g->slots[g->n];
    memset(s, 0, sizeof(*s));
    s->node = node;
    s->buf = calloc((size_t)(node->num_outputs > 0 ? node->num_outputs : 1),
                    sizeof(PtlTensorImpl *));
    if (s->buf == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
    }
    node->engine_gen = g->gen;
    node->engine_index = g->n;
    *is_new = 1;
    return g->n++;
}

static void
graph_free(Graph *g)
{
    for (int i = 0; i < g->n; i++) {
        Slot *s = &g->slots[i];
        for (int k = 0; k < s->node->num_outputs; k++) {
            ptl_xdecref(s->buf[k]);
        }
        free(s->buf);
        s->node->engine_gen = 0;
    }
    free(g->slots);
    free(g->heap);
}

/* Counts dependencies of every node reachable from `roots` (iterative DFS). */
static int
discover(Graph *g, PtlNode **roots, int nroots)
{
    int cap = 64, top = 0, is_new;
    int *stack = malloc(sizeof(int) * (size_t)cap);
    if (stack == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
    }
    for (int r = 0; r < nroots; r++) {
        int idx = graph_slot(g, roots[r], &is_new);
        if (idx < 0) {
            goto error;
        }
        if (!is_new) {
            continue;
        }
        stack[top++] = idx;
        while (top > 0) {
            int cur = stack[--top];
            PtlNode *node = g->slots[cur].node;
            for (int i = 0; i < node->num_next; i++) {
                PtlNode *c = node->next[i].fn;
                if (c == NULL) {
                    continue;
                }
                int ci = graph_slot(g, c, &is_new);
                if (ci < 0) {
                    goto error;
                }
                g->slots[ci].deps++;
                if (is_new) {
                    if (top == cap) {
                        int *bigger = realloc(stack, sizeof(int) * (size_t)cap * 2);
                        if (bigger == NULL) {
                            ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
                            goto error;
                        }
                        stack = bigger;
                        cap *= 2;
                    }
                    stack[top++] = ci;
                }
            }
        }
    }
    free(stack);
    return 0;
error:
    free(stack);
    return -1;
}

/* autograd.grad: marks nodes that lead to a target (post-order over the DAG). */
static int
mark_needed(Graph *g)
{
    int *stack = malloc(sizeof(int) * (size_t)(g->n + 1) * 2);
    if (stack == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
    }
    for (int r = 0; r < g->n; r++) {
        if (g->slots[r].visited_children) {
            continue;
        }
        int top = 0;
        stack[top++] = r;
        while (top > 0) {
            int cur = stack[top - 1];
            Slot *s = &g->slots[cur];
            if (s->visited_children == 0) {
                s->visited_children = 1;
                for (int i = 0; i < s->node->num_next; i++) {
                    PtlNode *c = s->node->next[i].fn;
                    if (c != NULL && g->slots[c->engine_index].visited_children == 0 &&
                        top < 2 * (g->n + 1)) {
                        stack[top++] = c->engine_index;
                    }
                }
                continue;
            }
            top--;
            if (s->visited_children == 2) {
                continue;
            }
            s->visited_children = 2;
            for (int i = 0; i < s->node->num_next; i++) {
                PtlNode *c = s->node->next[i].fn;
                if (c != NULL && g->slots[c->engine_index].needed) {
                    s->needed |= 2;   /* 2: runs because a descendant is needed */
                }
            }
        }
    }
    free(stack);
    return 0;
}

static int
heap_less(const Graph *g, int a, int b)
{
    return g->slots[a].node->seq < g->slots[b].node->seq;
}

static int
heap_push(Graph *g, int idx)
{
    if (g->heap == NULL) {
        g->heap = malloc(sizeof(int) * (size_t)(g->n + 1));
        if (g->heap == NULL) {
            return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
        }
    }
    int i = g->nheap++;
    g->heap[i] = idx;
    while (i > 0 && heap_less(g, g->heap[(i - 1) / 2], g->heap[i])) {
        int p = (i - 1) / 2, t = g->heap[p];
        g->heap[p] = g->heap[i];
        g->heap[i] = t;
        i = p;
    }
    return 0;
}

static int
heap_pop(Graph *g)
{
    int top = g->heap[0], i = 0;
    g->heap[0] = g->heap[--g->nheap];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < g->nheap && heap_less(g, g->heap[m], g->heap[l])) {
            m = l;
        }
        if (r < g->nheap && heap_less(g, g->heap[m], g->heap[r])) {
            m = r;
        }
        if (m == i) {
            break;
        }
        int t = g->heap[m];
        g->heap[m] = g->heap[i];
        g->heap[i] = t;
        i = m;
    }
    return top;
}

/* Whether buf[k] += g may add g into the buffer's own tensor t, as InputBuffer::accumulate
 * does: only without create_graph (an in-place add would be recorded), and only when the
 * buffer holds the last reference to t and to its storage (no Python object, view, saved
 * tensor or other slot sees it) and t is a dense contiguous tensor of g's dtype and sizes, so
 * that t.add_(g) computes the same values as t + g into t's memory.  The gradient sums of a
 * training step (residual branches, shared weights) then reuse one buffer instead of
 * allocating a cold one for each sum. */
static int
can_accumulate_in_place(const PtlTensorImpl *t, const PtlTensorImpl *g)
{
    return !ptl_grad_mode_enabled() && atomic_load(&t->refcnt) == 1 &&
           atomic_load(&t->storage->refcnt) == 1 && t->pyobj == NULL && t->base == NULL &&
           t->sparse == NULL && g->sparse == NULL && t->dtype == g->dtype &&
           t->device.type == g->device.type && t->device.index == g->device.index &&
           t->dim == g->dim &&
           memcmp(t->sizes, g->sizes, sizeof(int64_t) * (size_t)t->dim) == 0 &&
           ptl_tensor_is_contiguous(t);
}

/* buf[k] += g (g borrowed). */
static int
accumulate(PtlTensorImpl **slot, PtlTensorImpl *grad)
{
    if (*slot == NULL) {
        ptl_incref(grad);
        *slot = grad;
        return 0;
    }
    if (can_accumulate_in_place(*slot, grad)) {
        PtlIValue a[3] = {ptl_iv_tensor(*slot), ptl_iv_tensor(grad), ptl_iv_int(1)};
        PtlTensorImpl *sum = ptl_call_tensor(PTL_OP_add__Tensor, a);
        if (sum == NULL) {
            return -1;
        }
        ptl_decref(sum);
        return 0;
    }
    /* dense + sparse is defined, sparse + dense is not (InputBuffer::accumulate) */
    int swap = (*slot)->sparse != NULL && grad->sparse == NULL;
    PtlIValue a[3] = {ptl_iv_tensor(swap ? grad : *slot), ptl_iv_tensor(swap ? *slot : grad),
                      ptl_iv_int(1)};
    PtlTensorImpl *sum = ptl_call_tensor(PTL_OP_add_Tensor, a);
    if (sum == NULL) {
        return -1;
    }
    ptl_decref(*slot);
    *slot = sum;
    return 0;
}

/* A scalar root's implicit gradient; through the dispatcher for a tensor with the Python key,
 * whose subclass makes it, as PyTorch's (Note [Python tensors] in python/python_dispatch.c). */
static PtlTensorImpl *
ones_like(PtlTensorImpl *t)
{
    if (t->keys & PTL_KEYSET(PTL_KEY_PYTHON)) {
        PtlIValue a[6] = {ptl_iv_tensor(t), ptl_iv_none(), ptl_iv_none(), ptl_iv_none(),
                          ptl_iv_none(), ptl_iv_none()};
        return ptl_call_tensor(PTL_OP_ones_like, a);
    }
    PtlTensorImpl *o = ptl_empty(t->dim, t->sizes, t->dtype, t->device);
    PtlIValue one = ptl_iv_int(1);
    if (o != NULL && ptl_fill_scalar(o, &one) < 0) {
        PTL_CLEAR(o);
    }
    return o;
}

/* Anomaly mode: PyTorch's error when a node produced NaN. */
static int
check_nan(PtlNode *node, PtlTensorImpl **outs)
{
    for (int i = 0; i < node->num_next; i++) {
        if (outs[i] == NULL || !ptl_dtype_is_differentiable(outs[i]->dtype)) {
            continue;
        }
        /* a complex gradient is nan where either part is: its parts are checked */
        PtlIValue a[1] = {ptl_iv_tensor(outs[i])};
        PtlTensorImpl *parts = NULL;
        if (ptl_dtype_is_complex(outs[i]->dtype)) {
            if ((parts = ptl_call_tensor(PTL_OP_view_as_real, a)) == NULL) {
                return -1;
            }
            a[0] = ptl_iv_tensor(parts);
        }
        PtlTensorImpl *nan = ptl_call_tensor(PTL_OP_isnan, a), *any = NULL;
        ptl_xdecref(parts);
        if (nan != NULL) {
            PtlIValue b[1] = {ptl_iv_tensor(nan)};
            any = ptl_call_tensor(PTL_OP_any, b);
            ptl_decref(nan);
        }
        if (any == NULL) {
            return -1;
        }
        double found = ptl_item_readable(any) ? ptl_item_double(any) : 0.0;
        ptl_decref(any);
        if (found != 0.0) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Function '%s' returned nan values in its %dth "
                                 "output.", node->kind->name, i);
        }
    }
    return 0;
}

typedef struct Capture {
    PtlNode *node;        /* the target's gradient edge */
    int input_nr;
    PtlTensorImpl **out;  /* where the captured gradient goes */
} Capture;

/* The gradient edges of the roots (new refs in edges[], their nodes borrowed in nodes[]). */
static int
root_edges_of(PtlTensorImpl **roots, int n, PtlEdge *edges, PtlNode **nodes)
{
    for (int i = 0; i < n; i++) {
        edges[i] = ptl_gradient_edge(roots[i]);
        if (edges[i].fn == NULL) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "element %d of tensors does not require grad and does not have "
                                 "a grad_fn",
                                 i);
        }
        nodes[i] = edges[i].fn;
    }
    return 0;
}

/* Step 2 of Note [Engine]: the roots' gradients (ones for a scalar root given none) go into
 * the input buffers of their gradient edges. */
static int
seed_roots(Graph *g, PtlTensorImpl **roots, PtlTensorImpl **grads, int n, PtlNode **nodes,
           const PtlEdge *edges)
{
    for (int i = 0; i < n; i++) {
        PtlTensorImpl *gr = grads ? grads[i] : NULL, *made = NULL;
        if (gr == NULL) {
            if (roots[i]->numel != 1) {
                return ptl_error_set(PTL_ERR_RUNTIME, "grad can be implicitly created only for "
                                                      "scalar outputs");
            }
            if (!ptl_dtype_is_floating(roots[i]->dtype)) {
                return ptl_error_set(PTL_ERR_RUNTIME, "grad can be implicitly created only for "
                                     "real scalar outputs but got torch.%s",
                                     ptl_dtype_name(roots[i]->dtype));
            }
            if ((gr = made = ones_like(roots[i])) == NULL) {
                return -1;
            }
        }
        else if (ptl_dtype_is_complex(gr->dtype) != ptl_dtype_is_complex(roots[i]->dtype)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "For complex Tensors, both grad_output and output are required "
                                 "to have the same dtype. Mismatch in dtype: grad_output[%d] has "
                                 "a dtype of torch.%s and output[%d] has a dtype of torch.%s.",
                                 i, ptl_dtype_name(gr->dtype), i,
                                 ptl_dtype_name(roots[i]->dtype));
        }
        else if (gr->dim != roots[i]->dim ||
                 memcmp(gr->sizes, roots[i]->sizes, sizeof(int64_t) * (size_t)gr->dim) != 0) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "Mismatch in shape: grad_output[%d] has a shape that does not "
                                 "match the shape of output %d",
                                 i, i);
        }
        else if (gr->dtype != roots[i]->dtype) {
            /* a seed of another real dtype is cast to its root's, as validate_outputs casts
             * every gradient (so a leaf root's gradient has the leaf's dtype) */
            if ((gr = made = ptl_cast(gr, roots[i]->dtype)) == NULL) {
                return -1;
            }
        }
        Slot *s = &g->slots[nodes[i]->engine_index];
        int r = accumulate(&s->buf[edges[i].input_nr], gr);
        ptl_xdecref(made);
        if (r < 0) {
            return -1;
        }
    }
    return 0;
}

/* autograd.grad: a gradient arriving at a captured edge is kept (the first one). */
static void
capture_grads(const Slot *s, Capture *caps, int ncaps)
{
    for (int k = 0; k < ncaps; k++) {
        if (caps[k].node == s->node && s->buf[caps[k].input_nr] != NULL &&
            *caps[k].out == NULL) {
            ptl_incref(s->buf[caps[k].input_nr]);
            *caps[k].out = s->buf[caps[k].input_nr];
        }
    }
}

/* Whether a ready node is passed over: no gradient reached it (unless its kind runs
 * without one), it leads to no captured input (autograd.grad), or it accumulates into a
 * leaf backward(inputs=) did not list. */
static int
skips(const Slot *s, PtlTensorImpl **only, int nonly, const Capture *caps)
{
    PtlNode *node = s->node;
    int any = 0;
    for (int k = 0; k < node->num_outputs; k++) {
        any |= s->buf[k] != NULL;
    }
    int skip = (!any && !node->kind->runs_without_grads) || (caps != NULL && !(s->needed & 2));
    if (node->kind->is_accumulate_grad && nonly > 0) {
        int listed = 0;
        for (int k = 0; k < nonly; k++) {
            listed |= only[k] == node->variable;
        }
        skip |= !listed;
    }
    return skip;
}

/* Whether a gradient of shape gsizes can be summed down to input shape m (m expands to it,
 * PyTorch's is_expandable_to). */
static int
expands_to(const PtlInputMeta *m, int gdim, const int64_t *gsizes)
{
    if (m->dim > gdim) {
        return 0;
    }
    for (int d = 1; d <= m->dim; d++) {
        int64_t ms = m->sizes[m->dim - d], gs = gsizes[gdim - d];
        if (ms != gs && ms != 1) {
            return 0;
        }
    }
    return 1;
}

/* Every gradient a node hands to its next edges, checked against what the forward input
 * was (PyTorch's validate_outputs): a shape the input expands to is summed down to it,
 * another shape or device raises, another dtype is cast.  Shapes are compared only when
 * the metadata differs, so a matching gradient costs a few compares. */
static int
validate_outputs(PtlNode *node, PtlTensorImpl **outs)
{
    for (int i = 0; i < node->num_next; i++) {
        PtlTensorImpl *g = outs[i];
        const PtlInputMeta *m = &node->input_meta[i];
        if (g == NULL || node->next[i].fn == NULL) {
            continue;
        }
        int same_shape = g->dim == m->dim &&
                         memcmp(g->sizes, m->sizes, sizeof(int64_t) * (size_t)m->dim) == 0;
        if (!same_shape && !expands_to(m, g->dim, g->sizes)) {
            char got[128], want[128];
            ptl_format_sizes(got, sizeof(got), g->dim, g->sizes);
            ptl_format_sizes(want, sizeof(want), m->dim, m->sizes);
            return ptl_error_set(PTL_ERR_RUNTIME, "Function %s returned an invalid gradient at "
                                 "index %d - got %s but expected shape compatible with %s",
                                 node->kind->name, i, got, want);
        }
        if (!ptl_device_equal(g->device, m->device)) {
            return ptl_error_set(PTL_ERR_RUNTIME, "Function %s returned an invalid gradient at "
                                 "index %d - expected device %s but got %s", node->kind->name,
                                 i, ptl_device_type_name(m->device.type),
                                 ptl_device_type_name(g->device.type));
        }
        if (!same_shape || g->dtype != m->dtype) {
            PtlTensorImpl *r = finish(node, i, g);
            if (r == NULL) {
                return -1;
            }
            ptl_decref(g);
            outs[i] = r;
        }
    }
    return 0;
}

/* The node's formula between its Python pre- and post-hooks (and, for AccumulateGrad, the
 * leaf's C post-accumulate-grad hooks), with anomaly mode's NaN check: outs[] receives the
 * gradients for its next edges, checked by validate_outputs. */
static int
apply_node(Slot *s, PtlTensorImpl **outs)
{
    PtlNode *node = s->node;
    if (ptl_node_has_py_hooks(node) && ptl_autograd_hooks.pre != NULL &&
        ptl_autograd_hooks.pre(node, s->buf, node->num_outputs) < 0) {
        return -1;
    }
    int64_t start = ptl_profiler_node_begin();
    int rc = node->kind->apply(node, s->buf, outs);
    ptl_profiler_node_end(start, node->kind->name, node->seq, PTL_PROF_BACKWARD);
    if (rc < 0 ||
        (ptl_anomaly_enabled() && ptl_anomaly_check_nan() && check_nan(node, outs) < 0)) {
        return -1;
    }
    if (ptl_node_has_py_hooks(node) && ptl_autograd_hooks.post != NULL &&
        ptl_autograd_hooks.post(node, outs, node->num_next, s->buf, node->num_outputs) < 0) {
        return -1;
    }
    /* only AccumulateGrad has a variable (Note [C post-accumulate-grad hooks]) */
    if (node->variable != NULL && ptl_post_acc_grad_hooks_run(node->variable) < 0) {
        return -1;
    }
    return validate_outputs(node, outs);
}

/* Step 3 of Note [Engine]: sums the node's outputs (consumed) into its children's input
 * buffers and queues each child whose last incoming gradient this was. */
static int
pass_to_children(Graph *g, PtlNode *node, PtlTensorImpl **outs)
{
    for (int i = 0; i < node->num_next; i++) {
        PtlNode *c = node->next[i].fn;
        if (c == NULL) {
            PTL_CLEAR(outs[i]);
            continue;
        }
        Slot *cs = &g->slots[c->engine_index];
        if (outs[i] != NULL) {
            int r = accumulate(&cs->buf[node->next[i].input_nr], outs[i]);
            PTL_CLEAR(outs[i]);
            if (r < 0) {
                return -1;
            }
        }
        if (--cs->deps == 0 && heap_push(g, c->engine_index) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Steps 3 and 4 of Note [Engine] for one ready node: runs it (unless skipped), frees its
 * saved tensors without retain_graph, and hands its gradients on.  On failure anomaly mode
 * reports the node's forward. */
static int
run_node(Graph *g, int idx, int retain_graph, PtlTensorImpl **only, int nonly, Capture *caps,
         int ncaps)
{
    Slot *s = &g->slots[idx];
    PtlNode *node = s->node;
    PtlTensorImpl *outs_buf[16], **outs = outs_buf;
    int rc = -1;

    capture_grads(s, caps, ncaps);
    int skip = skips(s, only, nonly, caps);
    if (node->num_next > 16 &&
        (outs = calloc((size_t)node->num_next, sizeof(PtlTensorImpl *))) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
    }
    memset(outs, 0, sizeof(PtlTensorImpl *) * (size_t)(node->num_next < 16 ? 16 : node->num_next));
    int64_t start = skip ? -1 : ptl_profiler_node_begin();
    if (!skip && apply_node(s, outs) < 0) {
        goto done;
    }
    if (!retain_graph && !skip) {
        ptl_node_release_saved(node);
    }
    for (int k = 0; k < node->num_outputs; k++) {
        PTL_CLEAR(s->buf[k]);
    }
    rc = pass_to_children(g, node, outs);
done:
    ptl_profiler_node_end(start, node->kind->name, node->seq, PTL_PROF_EVALUATE);
    if (rc < 0) {
        if (node->py_trace != NULL && ptl_autograd_hooks.anomaly_report != NULL) {
            ptl_autograd_hooks.anomaly_report(node);
        }
        for (int i = 0; i < node->num_next; i++) {
            PTL_CLEAR(outs[i]);
        }
    }
    if (outs != outs_buf) {
        free(outs);
    }
    return rc;
}

/* Note [Engine] from the roots to the leaves (or, with caps, to the captured inputs). */
static int
run(PtlTensorImpl **roots, PtlTensorImpl **grads, int n, int retain_graph, int create_graph,
    PtlTensorImpl **only, int nonly, Capture *caps, int ncaps)
{
    Graph g;
    PtlNode **root_nodes = NULL;
    PtlEdge *root_edges = NULL;
    int rc = -1, old_mode = ptl_grad_mode_enabled();
    memset(&g, 0, sizeof(g));
    g.gen = atomic_fetch_add(&generation, 1);

    root_edges = calloc((size_t)n, sizeof(PtlEdge));
    root_nodes = calloc((size_t)n, sizeof(PtlNode *));
    if (root_edges == NULL || root_nodes == NULL) {
        ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
        goto done;
    }
    if (root_edges_of(roots, n, root_edges, root_nodes) < 0 || discover(&g, root_nodes, n) < 0) {
        goto done;
    }
    for (int k = 0; k < ncaps; k++) {
        if (caps[k].node != NULL && caps[k].node->engine_gen == g.gen) {
            g.slots[caps[k].node->engine_index].needed |= 1;
        }
    }
    if (caps != NULL && mark_needed(&g) < 0) {
        goto done;
    }
    ptl_grad_mode_set(create_graph);
    if (seed_roots(&g, roots, grads, n, root_nodes, root_edges) < 0) {
        goto done;
    }
    for (int i = 0; i < g.n; i++) {
        if (g.slots[i].deps == 0 && heap_push(&g, i) < 0) {
            goto done;
        }
    }
    while (g.nheap > 0) {
        if (run_node(&g, heap_pop(&g), retain_graph, only, nonly, caps, ncaps) < 0) {
            goto done;
        }
    }
    rc = 0;
done:
    ptl_grad_mode_set(old_mode);
    graph_free(&g);
    for (int i = 0; root_edges != NULL && i < n; i++) {
        if (root_edges[i].fn != NULL) {
            ptl_node_decref(root_edges[i].fn);
        }
    }
    free(root_edges);
    free(root_nodes);
    return rc;
}

int
ptl_backward(PtlTensorImpl **roots, PtlTensorImpl **grads, int n, int retain_graph,
             int create_graph, PtlTensorImpl **inputs, int ninputs)
{
    return run(roots, grads, n, retain_graph, create_graph, inputs, ninputs, NULL, 0);
}

int
ptl_autograd_grad(PtlTensorImpl **roots, PtlTensorImpl **grads, int n, PtlTensorImpl **inputs,
                  int ninputs, int retain_graph, int create_graph, int allow_unused,
                  PtlTensorImpl **out)
{
    Capture *caps = calloc((size_t)(ninputs ? ninputs : 1), sizeof(Capture));
    int rc = -1;
    if (caps == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "out of memory in the autograd engine");
    }
    for (int k = 0; k < ninputs; k++) {
        out[k] = NULL;
        if (!ptl_requires_grad(inputs[k])) {
            ptl_error_set(PTL_ERR_RUNTIME, "One of the differentiated Tensors does not require "
                                           "grad");
            goto done;
        }
        PtlEdge e = ptl_gradient_edge(inputs[k]);
        caps[k].node = e.fn;
        caps[k].input_nr = e.input_nr;
        caps[k].out = &out[k];
    }
    if (run(roots, grads, n, retain_graph, create_graph, NULL, 0, caps, ninputs) < 0) {
        goto done;
    }
    for (int k = 0; k < ninputs; k++) {
        if (out[k] == NULL && !allow_unused) {
            ptl_error_set(PTL_ERR_RUNTIME,
                          "One of the differentiated Tensors appears to not have been used in "
                          "the graph. Set allow_unused=True if this is the desired behavior.");
            goto done;
        }
    }
    rc = 0;
done:
    for (int k = 0; k < ninputs; k++) {
        if (caps[k].node != NULL) {
            ptl_node_decref(caps[k].node);
        }
        if (rc < 0) {
            PTL_CLEAR(out[k]);
        }
    }
    free(caps);
    return rc;
}
