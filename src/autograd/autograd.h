/* autograd.h -- graph nodes, edges, saved variables, autograd metadata and the engine.
 * Mirrors torch/csrc/autograd/{function.h, edge.h, saved_variable.h, variable.h, engine.h}.
 *
 * Note [Autograd ownership]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * - A tensor owns its grad_fn (PtlAutogradMeta.grad_fn) and its .grad.
 * - A node owns its next edges' nodes and its saved variables.  It never owns a tensor that
 *   points back at it: a saved OUTPUT is stored as an alias without autograd metadata and
 *   gets its grad_fn re-attached only when unpacked for create_graph.
 * - AccumulateGrad owns its leaf (`variable`); the leaf points back weakly
 *   (PtlAutogradMeta.grad_accumulator), and the node clears that pointer when it dies.
 * - `pyobj` is the node's Python wrapper (borrowed back-pointer, like TensorImpl.pyobj);
 *   `py_state` holds Python-side data (hooks, metadata) that src/python frees.
 * Nodes are freed when the last reference goes; a graph is a DAG, so refcounting frees it.
 *
 * Note [In-place provenance]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~
 * Beyond PyTorch, the "modified by an inplace operation" error names the node that saved
 * the tensor and the in-place op that bumped its version, with the Python file:line of both
 * when known.  ptl_autograd_hooks.site (installed by src/python) returns the innermost
 * user frame as an interned "file:line" that stays valid for good.  It is called only
 * when a node saves its first tensor (PtlNode.site) and when an in-place op bumps a version
 * counter that some node saved (PtlVersionCounter.saved; the op, site and resulting version
 * go into the counter), so graphs without in-place ops pay one call per saving node.
 *
 * Note [Autograd key]
 * ~~~~~~~~~~~~~~~~~~~
 * Every tensor carries the Autograd dispatch key.  Ops with a row in derivatives.def get the
 * autograd kernel under that key: when grad mode is on and an input requires grad it
 * redispatches below Autograd, then records a node whose next edges point at the inputs'
 * gradient edges and sets grad_fn on the outputs.  Ops flagged N (not differentiable) have no
 * kernel there and fall through.  Every other op gets the boxed fallback, which records a
 * node that raises "the derivative for 'X' is not implemented" if backward reaches it. */
#ifndef PTL_AUTOGRAD_AUTOGRAD_H
#define PTL_AUTOGRAD_AUTOGRAD_H

#include <stdatomic.h>
#include <stdint.h>

#include "../aten/dispatcher.h"
#include "../c10/tensor_impl.h"

/* room for a few tensors plus one tensor list of up to PTL_MAX_DIMS (index's indices) */
#define PTL_NODE_MAX_SAVED (6 + PTL_MAX_DIMS)

typedef struct PtlNode PtlNode;

typedef struct PtlEdge {
    PtlNode *fn;        /* owned; NULL: this input needs no gradient */
    int32_t input_nr;
} PtlEdge;

typedef struct PtlSavedVariable {
    PtlTensorImpl *data;   /* owned; NULL when never saved or released */
    int64_t version;       /* the tensor's version when saved */
    int is_output;         /* the node's own output, saved without its grad_fn */
    int output_nr;
    int defined;           /* something was saved (even an undefined tensor) */
    const char *producer;  /* grad_fn that made the tensor when saved (NULL: a leaf), for
                            * the "modified by an inplace operation" message */
    int producer_output_nr;
    void *packed;          /* what a saved_tensors_hooks pack hook returned (owned by
                            * src/python), in place of data; see Note [Saved tensor hooks] */
    PtlStorage *marked;    /* owned: data's storage when saved, marked as saved until data
                            * goes (Note [Saved tensor bytes]; `t.data = u` may change
                            * data's storage in between) */
} PtlSavedVariable;

/* What backward needs to know about each forward input (sum_to for broadcasting, checks). */
typedef struct PtlInputMeta {
    PtlDtype dtype;
    PtlDevice device;
    int dim;
    int64_t sizes[PTL_MAX_DIMS];
} PtlInputMeta;

/* grads_out[i] receives the gradient for next edge i (new ref, or NULL for none);
 * grads_in[k] is the gradient of forward output k (borrowed; may be NULL = zeros). */
typedef int (*PtlBackwardFn)(PtlNode *n, PtlTensorImpl **grads_in, PtlTensorImpl **grads_out);

typedef struct PtlNodeKind {
    const char *name;        /* "AddBackward0" */
    PtlBackwardFn apply;
    int is_accumulate_grad;
    int runs_without_grads;  /* applied even when no gradient reached it, every input NULL (a
                              * custom Function: PyTorch calls its backward with None) */
} PtlNodeKind;

/* Where a view lies in its base's storage (CopySlices, AsStridedBackward0; see
 * copy_slices.c).  Offsets are absolute storage offsets in elements. */
typedef struct PtlViewInfo {
    PtlNode *fn;                   /* CopySlices: the in-place op's own node (owned) */
    int dim, base_dim;
    int64_t sizes[PTL_MAX_DIMS], strides[PTL_MAX_DIMS], offset;
    int64_t base_sizes[PTL_MAX_DIMS], base_strides[PTL_MAX_DIMS], base_offset;
    int64_t extent;                /* elements of storage both geometries reach */
    /* a view of another dtype than its base (real, imag, view_as_real of a complex base;
     * view_as_complex of a real one): the complex side's geometry is kept in real units
     * with a trailing [2] dim, and the backward buffers hold real numbers */
    uint8_t parts, base_parts;
    /* a side with the conjugate bit (a conj view, Note [Conjugate views]): its windows are
     * read and written through conj(), the buffers holding the gradient of the memory */
    uint8_t conj, base_conj;
} PtlViewInfo;

struct PtlNode {
    atomic_long refcnt;
    const PtlNodeKind *kind;
    uint64_t seq;                  /* creation order; the engine runs the newest ready node first */
    const PtlOperator *op;         /* the forward op (NULL for AccumulateGrad / custom nodes) */
    int num_outputs;               /* forward outputs: gradients flowing in */
    int num_next;                  /* forward tensor inputs: gradients flowing out */
    PtlEdge *next;                 /* owned array [num_next] */
    PtlInputMeta *input_meta;      /* owned array [num_next] */
    uint32_t needs;                /* bit i: next edge i wants a gradient */
    int nsaved;
    PtlSavedVariable saved[PTL_NODE_MAX_SAVED];
    int nargs;
    PtlIValue args[PTL_SCHEMA_MAX_ARGS]; /* the forward's arguments; tensors not kept */
    int64_t *arg_lists;            /* owned copies of int-list and string arguments */
    PtlTensorImpl *variable;       /* AccumulateGrad: the leaf (owned) */
    PtlViewInfo *view;             /* CopySlices / AsStridedBackward0 (owned) */
    PtlNode *copy_slices;          /* the CopySlices that owns this in-place node (borrowed,
                                    * cleared when it dies): its saved output is the view */
    int released;                  /* saved variables freed after a backward */
    void *pyobj;                   /* borrowed back-pointer to the Python wrapper */
    void *py_state;                /* Python hooks/metadata, freed through ptl_autograd_hooks */
    void *py_trace;                /* anomaly mode: the forward's Python stack (owned) */
    const char *site;              /* "file:line" of the forward that saved tensors, or NULL */
    uint64_t engine_gen;           /* engine scratch: which backward last visited this node */
    int engine_index;              /* engine scratch: the node's slot in that backward */
};

typedef struct PtlAutogradMeta {
    int requires_grad;             /* leaves only; non-leaves require grad through grad_fn */
    PtlTensorImpl *grad;           /* owned */
    PtlNode *grad_fn;              /* owned */
    int output_nr;
    PtlNode *grad_accumulator;     /* weak, see Note [Autograd ownership] */
    int retains_grad;
    void *py_hooks;                /* tensor hooks (Python), owned by src/python */
    int64_t view_version;          /* a view: the version when grad_fn was last set, or when
                                    * it was made (Note [View regeneration]) */
    int view_creation;             /* a view: PtlViewCreation */
    void *py_self;                 /* owned by src/python: the tensor's own wrapper while its
                                    * grad refers back to it (Note [Tensor GC]) */
    struct PtlPostAccGradHook *post_acc_hooks;   /* owned list, Note [C post-accumulate-grad
                                                  * hooks] */
    int post_acc_running;          /* the engine is calling post_acc_hooks */
} PtlAutogradMeta;

/* How a view was made, as PyTorch's CreationMeta (Note [View regeneration]). */
typedef enum PtlViewCreation {
    PTL_VIEW_UNKNOWN = 0,          /* not recorded (made inside C): regenerated only when it
                                    * has a grad_fn */
    PTL_VIEW_DEFAULT,              /* in grad mode */
    PTL_VIEW_NO_GRAD,              /* in no_grad mode */
    PTL_VIEW_INFERENCE,            /* in inference mode */
    PTL_VIEW_MULTI_OUTPUT,         /* one of the outputs of unbind, split, ... */
} PtlViewCreation;

/* Callbacks into src/python (installed at import; NULL in a C-only world). */
typedef struct PtlAutogradHooks {
    /* Runs tensor pre-hooks / node pre-hooks for a node's incoming grads; may replace them.
     * 0 or -1 (Python error set, PTL_ERR_PYTHON). */
    int (*pre)(PtlNode *n, PtlTensorImpl **grads, int ngrads);
    /* Runs node post-hooks (grad_inputs, grad_outputs). */
    int (*post)(PtlNode *n, PtlTensorImpl **grads_out, int nout, PtlTensorImpl **grads_in, int nin);
    void (*free_state)(void *py_state);
    void (*free_tensor_hooks)(void *py_hooks);
    /* The current Python call site, see Note [In-place provenance]; NULL if unknown. */
    const char *(*site)(void);
    /* Anomaly mode: stores the Python stack in n->py_trace when n is made; warns with it
     * when n fails in backward (keeping the pending error); frees a py_trace. */
    void (*anomaly_record)(PtlNode *n);
    void (*anomaly_report)(PtlNode *n);
    void (*free_trace)(void *py_trace);
    /* Note [Saved tensor hooks]: set only while saved_tensors_hooks are active.  pack sets
     * *packed to the hook's result for t (borrowed), 0 or -1 (Python error set). */
    int (*pack)(PtlTensorImpl *t, void **packed);
    /* The tensor the unpack hook gives for packed (new ref), or NULL (Python error set);
     * free_packed drops a packed value.  Installed for good once hooks were first used. */
    PtlTensorImpl *(*unpack)(void *packed);
    void (*free_packed)(void *packed);
} PtlAutogradHooks;
extern PtlAutogradHooks ptl_autograd_hooks;

/* Whether the engine must call ptl_autograd_hooks for n: it has Python state, or it is the
 * AccumulateGrad of a leaf with Python hooks. */
static inline int
ptl_node_has_py_hooks(const PtlNode *n)
{
    const PtlAutogradMeta *m = n->variable ? n->variable->autograd_meta : NULL;
    return n->py_state != NULL || (m != NULL && m->py_hooks != NULL);
}

/* Note [C post-accumulate-grad hooks]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A leaf may carry hooks written in C, fn(ctx, leaf), that the engine calls after
 * AccumulateGrad updated the leaf's .grad, after its Python post-accumulate-grad hooks, in
 * registration order: where PyTorch's DDP Reducer hooks the AccumulateGrad node, whose post
 * hooks run after the tensor's post-accumulate-grad hooks.  They serve C code that must
 * react to every parameter's gradient without a Python call per parameter (DDP's reducer,
 * src/python/reducer.c).  They live in the leaf's autograd metadata, so they outlive the
 * AccumulateGrad node (which is weak) and fire in every backward that accumulates into the
 * leaf (not in autograd.grad, nor for a leaf backward(inputs=) leaves out).
 * - fn returns 0, or -1 with an error set (PTL_ERR_PYTHON for a pending Python error); -1
 *   stops backward as a failing node does.
 * - free_ctx (may be NULL) releases ctx when the hook is removed or the leaf dies.
 * - A hook removed while the engine calls the leaf's hooks (by itself or another) is not
 *   called any more; its ctx is released after the engine's pass. */
typedef int (*PtlPostAccGradFn)(void *ctx, PtlTensorImpl *leaf);
typedef struct PtlPostAccGradHook {
    PtlPostAccGradFn fn;           /* NULL: removed during the engine's pass */
    void *ctx;
    void (*free_ctx)(void *ctx);
    int64_t id;
    struct PtlPostAccGradHook *next;
} PtlPostAccGradHook;
/* Appends fn(ctx, leaf) to leaf's hooks; its id (> 0), or -1 (out of memory, ctx not
 * taken). */
int64_t ptl_post_acc_grad_hook_add(PtlTensorImpl *leaf, PtlPostAccGradFn fn, void *ctx,
                                   void (*free_ctx)(void *ctx));
/* Removes hook `id` from leaf: 1, or 0 when it has no such hook. */
int ptl_post_acc_grad_hook_remove(PtlTensorImpl *leaf, int64_t id);
/* The engine's call after AccumulateGrad ran on leaf: 0 or -1 (a hook failed). */
int ptl_post_acc_grad_hooks_run(PtlTensorImpl *leaf);
/* Releases every hook of m (the metadata is being freed). */
void ptl_post_acc_grad_hooks_free(PtlAutogradMeta *m);

/* ---- metadata ---- */
PtlAutogradMeta *ptl_autograd_meta(PtlTensorImpl *t, int create);   /* NULL if none/oom */
int ptl_requires_grad(const PtlTensorImpl *t);
/* Sets requires_grad on a leaf; RuntimeError for non-float dtypes or non-leaves. */
int ptl_set_requires_grad(PtlTensorImpl *t, int on);
PtlNode *ptl_grad_fn(const PtlTensorImpl *t);                        /* borrowed */
int ptl_is_leaf(const PtlTensorImpl *t);
/* The gradient edge of t: (grad_fn, output_nr), or (its AccumulateGrad, 0) for a leaf that
 * requires grad, or (NULL, 0).  The edge's node is a new reference. */
PtlEdge ptl_gradient_edge(PtlTensorImpl *t);
void ptl_set_grad_fn(PtlTensorImpl *t, PtlNode *fn, int output_nr); /* fn borrowed (increfs) */

/* References to t held by t's grad and what the grad owns (view bases, grad_fns and their
 * graphs: AccumulateGrad's variable, saved tensors), exploring at most 64 objects.
 * exclusive: only from objects nothing outside that group keeps alive (trial deletion, for
 * the cycle collector: Note [Tensor GC]).  When the group is too big to tell: 0 if exclusive,
 * else 1. */
int ptl_grad_refs_to(const PtlTensorImpl *t, int exclusive);
/* t.detach() below Autograd: what a tensor with the Python key saves of itself as an output,
 * keeps as .grad and gives as .data, made by its subclass (Note [Python tensors] in
 * python/python_dispatch.c).  New ref, or NULL with the error set. */
PtlTensorImpl *ptl_detach_below_autograd(PtlTensorImpl *t);

/* ---- nodes ---- */
PtlNode *ptl_node_new(const PtlNodeKind *kind, int num_outputs, int num_next);
void ptl_node_incref(PtlNode *n);
void ptl_node_decref(PtlNode *n);
uint64_t ptl_next_sequence_nr(void);
/* The number the next node will get, without taking it (the profiler's forward-to-backward
 * link: Note [Profiler] in profiler.h). */
uint64_t ptl_peek_sequence_nr(void);
/* Whether t (borrowed; NULL allowed) may be saved for backward: 0, or -1 with PyTorch's
 * RuntimeError for an inference tensor outside inference mode (Note [Inference tensors]).
 * Callers check before they run the forward, so a refused call changes nothing. */
int ptl_saved_check(const PtlTensorImpl *t);
/* Saves t (borrowed; NULL allowed) into slot i. */
void ptl_saved_set(PtlNode *n, int i, PtlTensorImpl *t, int is_output, int output_nr);
/* Unpacks slot i (new ref; NULL for an undefined tensor), checking the version counter:
 * PyTorch's "modified by an inplace operation" and "backward through the graph a second
 * time" errors. */
PtlTensorImpl *ptl_saved_unpack(PtlNode *n, int i, int *err);
void ptl_node_release_saved(PtlNode *n);
/* Passes every tensor n saved through the active pack hook, keeping what it returns in
 * their place (Note [Saved tensor hooks]); 0, or -1 with the Python error pending. */
int ptl_node_pack_saved(PtlNode *n);
/* The same for slot i alone, with pack(t, packed, ctx) (t borrowed) instead of the active
 * hook; nothing happens to a slot without a tensor.  0 or -1 (error set). */
int ptl_saved_pack(PtlNode *n, int i, int (*pack)(PtlTensorImpl *t, void **packed, void *ctx),
                   void *ctx);
/* The PTL_SAVE_* mask of what n's forward op saves (derivatives.h); 0 for nodes without a
 * derivatives.def row (AccumulateGrad, custom Functions). */
uint32_t ptl_node_saves(const PtlNode *n);
extern const PtlNodeKind ptl_accumulate_grad_kind;

/* ---- in-place ops on views (copy_slices.c) ---- */
/* After in-place op node `fn` (borrowed) wrote into view `self`: rewrites the history of
 * self's base with a CopySlices node and gives self an AsStridedBackward0 grad_fn. */
int ptl_copy_slices_rebase(PtlTensorImpl *self, PtlNode *fn);
/* Note [View regeneration]
 * ~~~~~~~~~~~~~~~~~~~~~~~~
 * As in PyTorch, every view of a floating tensor made by a view op is a differentiable view,
 * even when its base does not require grad: its autograd metadata records how it was made
 * (view_creation: in grad mode by the Autograd kernel, in no_grad or inference mode when
 * src/python first wraps it) and the version of its storage then (view_version), updated
 * whenever its grad_fn is set.  A view reports requires_grad when its base does.  If an
 * in-place op on its base or on a sibling view has moved the version since and the view or
 * its base now has history, the view's history is stale: reading its grad_fn
 * (ptl_grad_fn, ptl_gradient_edge, ptl_view_check) first replaces it with AsStridedBackward0
 * over the base's current gradient edge, as PyTorch does.  A view made in no_grad or
 * inference mode, or one output of a multi-output view op, cannot be regenerated:
 * ptl_view_check raises PyTorch's error instead, and so does an in-place op on such a view
 * itself (ptl_view_inplace_error).  A view of another dtype than its base (real, imag,
 * view_as_real of a complex tensor; view_as_complex of a real one) is replayed on the real
 * numbers of both (PtlViewInfo's parts).  detach() and .data are not views.
 * ptl_view_refresh returns 0, or -1 when the new node could not be made or the view may not
 * be regenerated (the old history is kept). */
int ptl_view_refresh(PtlTensorImpl *t);
/* Regenerates t's history if it is stale; 0, or -1 with PyTorch's error for a view that may
 * not be regenerated. */
int ptl_view_check(PtlTensorImpl *t);
/* Records how view t (a new view of a floating tensor) was made and its version now; `from`
 * (borrowed, may be NULL) is the view it was made of, whose restriction it inherits.  0 or
 * -1 (out of memory). */
int ptl_view_mark(PtlTensorImpl *t, PtlViewCreation how, const PtlTensorImpl *from);
/* For an in-place op with grad on view t: -1 with PyTorch's error when t may not be modified
 * in place (made in no_grad or inference mode, or by a multi-output op), else 0. */
int ptl_view_inplace_error(const PtlTensorImpl *t);
/* Whether t is a differentiable view (a view of a floating tensor made by a view op). */
static inline int
ptl_is_diff_view(const PtlTensorImpl *t)
{
    const PtlAutogradMeta *m = t->autograd_meta;
    return t->base != NULL && (t->flags & PTL_TF_IS_VIEW) && m != NULL &&
           m->view_creation != PTL_VIEW_UNKNOWN;
}
/* A fresh AsStridedBackward0 over (cs, 0): the grad_fn of the view that CopySlices `cs`
 * (borrowed) wrote, for unpacking its in-place node's saved output.  New ref or NULL. */
PtlNode *ptl_copy_slices_view_fn(PtlNode *cs);

/* ---- engine ---- */
/* backward of roots[i] with grads[i] (NULL: ones for scalars).  inputs (optional): only
 * accumulate into these leaves.  0 or -1. */
int ptl_backward(PtlTensorImpl **roots, PtlTensorImpl **grads, int n, int retain_graph,
                 int create_graph, PtlTensorImpl **inputs, int ninputs);
/* autograd.grad: gradients of roots w.r.t. inputs, written to out[ninputs] (new refs, NULL
 * where unused: allow_unused decides whether that is an error). */
int ptl_autograd_grad(PtlTensorImpl **roots, PtlTensorImpl **grads, int n,
                      PtlTensorImpl **inputs, int ninputs, int retain_graph, int create_graph,
                      int allow_unused, PtlTensorImpl **out);

/* ---- anomaly mode (global, as PyTorch's): nodes keep their forward's stack, and with
 * check_nan the engine checks every gradient for NaN ---- */
int ptl_anomaly_enabled(void);
int ptl_anomaly_check_nan(void);     /* the check_nan setting, kept while anomaly mode is off */
void ptl_anomaly_set(int on, int check_nan);

/* ---- grad mode and inference mode (the thread's; Note [Inference tensors]) ---- */
int ptl_grad_mode_enabled(void);
/* Sets grad mode; the Autograd key stays excluded while inference mode is on. */
void ptl_grad_mode_set(int on);
int ptl_inference_mode_enabled(void);
/* Enters (on) or leaves inference mode, setting grad mode to !on as PyTorch's InferenceMode
 * guard does; the caller restores the previous grad mode after leaving. */
void ptl_inference_mode_set(int on);

/* ---- registration ---- */
int ptl_autograd_init(void);

#endif
