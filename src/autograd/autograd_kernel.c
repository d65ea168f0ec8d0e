/* autograd_kernel.c -- the kernel under the Autograd dispatch key and its fallback.
 * Mirrors the generated VariableType kernels (torch/csrc/autograd/generated/VariableType*.cpp)
 * and autogradNotImplementedFallback.  See Note [Autograd key]. */
#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "derivatives.h"

#define INPUTS_INLINE 64

static const PtlGradRow *rows_by_op[PTL_OP_COUNT];
static const PtlNondiffRow *nondiff_by_op[PTL_OP_COUNT];
static uint32_t saves_by_op[PTL_OP_COUNT];     /* PTL_SAVE_* of the op's row */
static uint32_t nondiff_args_by_op[PTL_OP_COUNT];
static uint8_t is_view_op[PTL_OP_COUNT];   /* returns Tensor(a) / Tensor(a)[] of an input */

static int
not_implemented_apply(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "the derivative for '%s%s%s' is not implemented.",
                         n->op->schema.name, n->op->schema.overload[0] ? "." : "",
                         n->op->schema.overload);
}

static const PtlNodeKind not_implemented_kind = {.name = "NotImplemented",
                                                  .apply = not_implemented_apply};

/* An operator added at run time (pytorchlite.library) with a backend kernel and no autograd
 * kernel: backward warns and gives its inputs no gradient, PyTorch's autograd fallback in
 * its default "warn" mode (torch/csrc/autograd/autograd_not_implemented_fallback.cpp). */
static int
warn_not_implemented_apply(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)gi;
    (void)go;
    ptl_warn("%s%s%s: an autograd kernel was not registered to the Autograd key(s) but we are "
             "trying to backprop through it. This may lead to silently incorrect behavior. "
             "This behavior is deprecated and will be removed in a future version of PyTorch. "
             "If your operator is differentiable, please ensure you have registered an "
             "autograd kernel to the correct Autograd key (e.g. DispatchKey::Autograd, "
             "DispatchKey::CompositeImplicitAutograd). If your operator is not "
             "differentiable, or to squash this warning and use the previous behavior, please "
             "register torch::CppFunction::makeFallthrough() to DispatchKey::Autograd.",
             n->op->schema.name, n->op->schema.overload[0] ? "." : "", n->op->schema.overload);
    return 0;
}

static const PtlNodeKind warn_not_implemented_kind = {
    .name = "torch::autograd::WarnNotImplemented", .apply = warn_not_implemented_apply};

/* The differentiable tensor inputs of a call, flattened (tensor lists element by element).
 * Up to INPUTS_INLINE of them live in the struct; a longer tensor list (cat of hundreds of
 * tensors) moves them to the heap, which inputs_release frees. */
typedef struct Inputs {
    int n, cap;
    int failed;                     /* growing the arrays ran out of memory */
    PtlTensorImpl **t;              /* borrowed; NULL for an absent optional tensor */
    int *arg;                       /* schema argument index */
    PtlTensorImpl *t_inline[INPUTS_INLINE];
    int arg_inline[INPUTS_INLINE];
} Inputs;

static void
inputs_release(Inputs *in)
{
    if (in->t != in->t_inline) {
        free(in->t);
        free(in->arg);
    }
    in->t = in->t_inline;
    in->arg = in->arg_inline;
    in->n = 0;
    in->cap = INPUTS_INLINE;
}

/* Twice the room; 0, or -1 (and `failed` set) when memory runs out. */
static int
inputs_grow(Inputs *in)
{
    int cap = 2 * in->cap;
    PtlTensorImpl **t = malloc(sizeof(PtlTensorImpl *) * (size_t)cap);
    int *arg = malloc(sizeof(int) * (size_t)cap);
    if (t == NULL || arg == NULL) {
        free(t);
        free(arg);
        in->failed = 1;
        return -1;
    }
    memcpy(t, in->t, sizeof(PtlTensorImpl *) * (size_t)in->n);
    memcpy(arg, in->arg, sizeof(int) * (size_t)in->n);
    if (in->t != in->t_inline) {
        free(in->t);
        free(in->arg);
    }
    in->t = t;
    in->arg = arg;
    in->cap = cap;
    return 0;
}

/* Appends t (borrowed; NULL for an absent optional tensor), from schema argument `arg`.
 * Returns whether it was appended and requires grad. */
static int
add_input(Inputs *in, PtlTensorImpl *t, int arg)
{
    if (in->n == in->cap && inputs_grow(in) < 0) {
        return 0;
    }
    in->arg[in->n] = arg;
    in->t[in->n++] = t;
    return t != NULL && ptl_requires_grad(t);
}

/* Whether any tensor input of the call requires grad (every input collected in `in`). */
static int
collect_inputs(const PtlOperator *op, const PtlIValue *s, Inputs *in)
{
    const PtlSchema *sc = &op->schema;
    int any = 0;
    in->n = 0;
    in->cap = INPUTS_INLINE;
    in->failed = 0;
    in->t = in->t_inline;
    in->arg = in->arg_inline;
    for (int i = 0; i < sc->nargs; i++) {
        const PtlArg *a = &sc->args[i];
        if (a->kwarg_only && a->alias_write) {
            continue;   /* out= */
        }
        if (a->kind == PTL_ARG_TENSOR) {
            any |= add_input(in, s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL, i);
        }
        else if (a->kind == PTL_ARG_TENSORLIST && s[i].tag == PTL_IV_TENSORLIST) {
            for (int64_t k = 0; k < s[i].u.tl.n; k++) {
                any |= add_input(in, s[i].u.tl.data[k], i);
            }
        }
    }
    return any;
}

/* PyTorch's check_no_requires_grad: an argument that derivatives.yaml does not differentiate
 * must not require grad.  Checked when the call is recorded, so the error points at the
 * forward call rather than at backward. */
static int
check_nondiff(const PtlOperator *op, const PtlNondiffRow *row, const PtlIValue *s)
{
    for (int i = 0; i < op->schema.nargs && i < PTL_SAVE_ARG_MAX; i++) {
        if ((nondiff_args_by_op[op->id] & PTL_SAVE_ARG(i)) && s[i].tag == PTL_IV_TENSOR &&
            ptl_requires_grad(s[i].u.t)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "The function '%s' is not differentiable with respect to "
                                 "argument '%s'. This input cannot have requires_grad True.",
                                 row->name != NULL ? row->name(s) : op->schema.name + 6,
                                 op->schema.args[i].name);
        }
    }
    return 0;
}

static int
is_output_alias_of_input(const PtlIValue *out, const Inputs *in)
{
    for (int i = 0; i < in->n; i++) {
        if (out->tag == PTL_IV_TENSOR && out->u.t == in->t[i]) {
            return 1;
        }
    }
    return 0;
}

/* Records how the views a view op returned were made (Note [View regeneration]): in grad
 * mode, one of several outputs or of a view `from` (the op's self, borrowed).  0 or -1. */
static int
mark_views(const PtlOperator *op, const PtlIValue *s, const PtlTensorImpl *from)
{
    for (int k = 0; k < op->schema.nrets; k++) {
        int n = s[k].tag == PTL_IV_TENSORLIST ? (int)s[k].u.tl.n : s[k].tag == PTL_IV_TENSOR;
        PtlTensorImpl *const *ts = s[k].tag == PTL_IV_TENSORLIST ? s[k].u.tl.data : &s[k].u.t;
        PtlViewCreation how = s[k].tag == PTL_IV_TENSORLIST ? PTL_VIEW_MULTI_OUTPUT
                                                            : PTL_VIEW_DEFAULT;
        for (int j = 0; j < n; j++) {
            PtlTensorImpl *t = ts[j];
            if (t != from && (t->flags & PTL_TF_IS_VIEW) && t->base != NULL &&
                ptl_dtype_is_differentiable(t->dtype) && ptl_view_mark(t, how, from) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Copies the call's non-tensor arguments into the node: int lists and strings are
 * deep-copied into one owned block (strings after the lists, as int64 words). */
static int
keep_args(PtlNode *node, const PtlOperator *op, const PtlIValue *args)
{
    int64_t total = 0, off = 0;
    node->nargs = op->schema.nargs;
    for (int i = 0; i < node->nargs; i++) {
        if (args[i].tag == PTL_IV_INTLIST) {
            total += args[i].u.il.n;
        }
        else if (args[i].tag == PTL_IV_STRING) {
            total += (int64_t)(strlen(args[i].u.s) / sizeof(int64_t)) + 1;
        }
    }
    if (total > 0 && (node->arg_lists = malloc(sizeof(int64_t) * (size_t)total)) == NULL) {
        return ptl_error_set(PTL_ERR_MEMORY, "can't allocate an autograd node");
    }
    for (int i = 0; i < node->nargs; i++) {
        node->args[i] = args[i];
        if (args[i].tag == PTL_IV_TENSOR || args[i].tag == PTL_IV_TENSORLIST ||
            args[i].tag == PTL_IV_GENERATOR) {
            node->args[i] = ptl_iv_none();   /* tensors are saved explicitly or not at all */
        }
        else if (args[i].tag == PTL_IV_INTLIST) {
            if (args[i].u.il.n > 0) {   /* an empty list may have no arg_lists to point into */
                memcpy(node->arg_lists + off, args[i].u.il.data,
                       sizeof(int64_t) * (size_t)args[i].u.il.n);
            }
            node->args[i].u.il.data = node->arg_lists + off;
            off += args[i].u.il.n;
        }
        else if (args[i].tag == PTL_IV_STRING) {
            size_t len = strlen(args[i].u.s);
            memcpy(node->arg_lists + off, args[i].u.s, len + 1);
            node->args[i].u.s = (const char *)(node->arg_lists + off);
            off += (int64_t)(len / sizeof(int64_t)) + 1;
        }
    }
    return 0;
}

/* No input requires grad (or a not differentiable op): the call runs below Autograd and only
 * the views it returns are marked (Note [View regeneration]). */
static int
run_untracked(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    PtlTensorImpl *from = s[0].tag == PTL_IV_TENSOR ? s[0].u.t : NULL;
    int rc = ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_AUTOGRAD), s);
    if (rc == 0 && op->id < PTL_OP_COUNT && is_view_op[op->id] && mark_views(op, s, from) < 0) {
        for (int k = 0; k < op->schema.nrets; k++) {
            ptl_ivalue_release(&s[k]);
        }
        return -1;
    }
    return rc;
}

/* The calls autograd refuses to record: an argument PyTorch does not differentiate that
 * requires grad, too many tensor inputs, out= arguments.  Also regenerates the history of
 * stale views among the inputs (Note [View regeneration]).  0 or -1. */
static int
check_call(const PtlOperator *op, const PtlIValue *s, const Inputs *in)
{
    const PtlSchema *sc = &op->schema;
    if (op->id < PTL_OP_COUNT && nondiff_by_op[op->id] != NULL &&
        check_nondiff(op, nondiff_by_op[op->id], s) < 0) {
        return -1;
    }
    if (in->failed) {
        return ptl_error_set(PTL_ERR_MEMORY, "%s: out of memory recording the inputs for autograd",
                             sc->name + 6);
    }
    if (sc->out_index >= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "%s(): functions with out=... arguments don't support automatic "
                             "differentiation, but one of the arguments requires grad.",
                             sc->name + 6);
    }
    for (int i = 0; i < in->n; i++) {
        PtlTensorImpl *t = in->t[i];
        if (t != NULL && (t->flags & PTL_TF_IS_VIEW) && ptl_view_check(t) < 0) {
            return -1;
        }
    }
    return 0;
}

/* What an in-place op needs before it runs: self's version, whether self is a view whose
 * base's history gets rewritten (Note [CopySlices]), and a copy of self as it was when the
 * formula saves self.  PyTorch's errors for a leaf (or a view of one) that requires grad. */
typedef struct InplaceSelf {
    int64_t version;
    int on_view;
    PtlTensorImpl *orig;        /* owned; NULL unless self is saved */
} InplaceSelf;

static int
prepare_inplace(const PtlOperator *op, const PtlGradRow *row, PtlTensorImpl *self,
                InplaceSelf *ip)
{
    ip->version = atomic_load(&self->version->version);
    /* a view: the base's history is rewritten (Note [CopySlices]), unless the view may not be
     * modified in place with grad (Note [View regeneration]); a view made inside C that does
     * not require grad, of a base that does, is a plain tensor */
    if (self->base != NULL && (self->flags & PTL_TF_IS_VIEW) &&
        (ptl_is_diff_view(self) || ptl_requires_grad(self) || !ptl_requires_grad(self->base))) {
        if (ptl_view_inplace_error(self) < 0) {
            return -1;
        }
        if (ptl_is_leaf(self->base) && ptl_requires_grad(self->base)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "a view of a leaf Variable that requires grad is being used in "
                                 "an in-place operation.");
        }
        ip->on_view = 1;
    }
    if (ptl_is_leaf(self) && ptl_requires_grad(self)) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "a leaf Variable that requires grad is being used in an in-place "
                             "operation.");
    }
    if (row != NULL && (saves_by_op[op->id] & PTL_SAVE_ARG(0))) {
        /* the formula needs self as it was before the op changes it: a clone made through
         * the dispatcher, so it keeps self's history for double backward */
        PtlIValue cv[2] = {ptl_iv_tensor(self), ptl_iv_none()};
        if ((ip->orig = ptl_call_tensor(PTL_OP_clone, cv)) == NULL) {
            return -1;
        }
    }
    return 0;
}

/* The node for a recorded call: its next edges (taken from edges[]) and the metadata of
 * the inputs as they were before the call.  New ref or NULL. */
static PtlNode *
make_node(const PtlOperator *op, const PtlGradRow *row, const PtlIValue *args,
          const PtlIValue *s, const Inputs *in, PtlEdge *edges)
{
    int nouts = 0;
    for (int k = 0; k < op->schema.nrets; k++) {
        nouts += s[k].tag == PTL_IV_TENSORLIST ? (int)s[k].u.tl.n : 1;
    }
    const PtlNodeKind *kind = row                     ? &row->kind
                              : op->id >= PTL_OP_COUNT ? &warn_not_implemented_kind
                                                       : &not_implemented_kind;
    PtlNode *node = ptl_node_new(kind, nouts, in->n);
    if (node == NULL || keep_args(node, op, args) < 0) {
        if (node != NULL) {
            ptl_node_decref(node);
        }
        return NULL;
    }
    node->op = op;
    for (int i = 0; i < in->n; i++) {
        node->next[i] = edges[i];
        edges[i].fn = NULL;
        if (node->next[i].fn != NULL) {
            node->needs |= 1u << (i < 31 ? i : 31);
        }
        if (in->t[i] != NULL) {
            PtlInputMeta *m = &node->input_meta[i];
            PtlTensorImpl *t = in->t[i];
            m->dtype = t->dtype;
            m->device = t->device;
            m->dim = t->dim;
            memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim);
        }
    }
    return node;
}

/* The inference tensors among the arguments the op's row saves are refused before the op
 * runs (Note [Inference tensors] in c10/tensor_impl.h); 0 when there are none.  A row saves
 * its tensors whichever inputs need a gradient, where PyTorch saves only those the needed
 * formulas read: so `x * 2` with x an inference tensor that requires grad is refused here
 * (x is saved) and allowed by PyTorch (x only serves the gradient of 2). */
static int
check_saved_args(const PtlOperator *op, const PtlIValue *s)
{
    uint32_t save = saves_by_op[op->id];
    for (int i = 0; i < PTL_SAVE_ARG_MAX && i < op->schema.nargs; i++) {
        if (!(save & PTL_SAVE_ARG(i))) {
            continue;
        }
        if (s[i].tag == PTL_IV_TENSOR && ptl_saved_check(s[i].u.t) < 0) {
            return -1;
        }
        for (int64_t k = 0; s[i].tag == PTL_IV_TENSORLIST && k < s[i].u.tl.n; k++) {
            if (ptl_saved_check(s[i].u.tl.data[k]) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Saves what the op's row names (derivatives.def): the arguments in schema order (self as
 * it was before an in-place op), then outputs 0, 1, 2, then the elements of a tensor list. */
static void
save_variables(PtlNode *node, const PtlOperator *op, const PtlIValue *args, const PtlIValue *s,
               const InplaceSelf *ip)
{
    uint32_t save = saves_by_op[op->id];
    int slot = 0;
    for (int i = 0; i < PTL_SAVE_ARG_MAX; i++) {
        if (!(save & PTL_SAVE_ARG(i))) {
            continue;
        }
        if (args[i].tag == PTL_IV_TENSORLIST) {
            continue;   /* saved last, below */
        }
        PtlTensorImpl *t = args[i].tag == PTL_IV_TENSOR ? args[i].u.t : NULL;
        if (i == 0 && ip->orig != NULL) {
            t = ip->orig;
        }
        ptl_saved_set(node, slot++, t, 0, 0);
        if (op->schema.inplace && i > 0 && t != NULL && t->version == args[0].u.t->version) {
            /* an input sharing self's storage (y.mul_(y)) is saved as it was before the op
             * wrote it, so unpacking it raises, as in PyTorch */
            node->saved[slot - 1].version = ip->version;
        }
    }
    if (save & PTL_SAVE_RESULT) {
        ptl_saved_set(node, slot++, s[0].u.t, 1, 0);
    }
    if (save & PTL_SAVE_RESULT1) {
        /* an integer output (indices) or a non-differentiable one (log_sigmoid_forward's
         * buffer) has no grad_fn, so it is saved as a plain tensor */
        ptl_saved_set(node, slot++, s[1].u.t,
                      ptl_dtype_is_differentiable(s[1].u.t->dtype) &&
                          !(nondiff_args_by_op[op->id] & PTL_SAVE_RESULT1), 1);
    }
    if (save & PTL_SAVE_RESULT2) {
        ptl_saved_set(node, slot++, s[2].u.t, 1, 2);
    }
    if (save & PTL_SAVE_RESULT3) {
        ptl_saved_set(node, slot++, s[3].u.t, 1, 3);
    }
    /* a saved tensor list (index's Tensor?[] indices) comes after everything else, one slot
     * per element (NULL for None), so the slots of plain tensors keep their order */
    for (int i = 0; i < PTL_SAVE_ARG_MAX; i++) {
        if ((save & PTL_SAVE_ARG(i)) && args[i].tag == PTL_IV_TENSORLIST) {
            for (int64_t k = 0; k < args[i].u.tl.n && slot < PTL_NODE_MAX_SAVED; k++) {
                ptl_saved_set(node, slot++, args[i].u.tl.data[k], 0, 0);
            }
        }
    }
}

/* Outputs take the node as their grad_fn (after the views among them are marked); every
 * return keeps its slot, so an undefined one (convolution_backward with part of its
 * output_mask off) leaves the next output's number where the formulas expect it.  0 or -1
 * (the outputs released). */
static int
set_history(const PtlOperator *op, PtlIValue *s, PtlNode *node, const Inputs *in)
{
    const PtlSchema *sc = &op->schema;
    if (op->id < PTL_OP_COUNT && is_view_op[op->id] &&
        mark_views(op, s, in->n > 0 ? in->t[0] : NULL) < 0) {
        for (int k = 0; k < sc->nrets; k++) {
            ptl_ivalue_release(&s[k]);
        }
        return -1;
    }
    for (int k = 0, nr = 0; k < sc->nrets; k++) {
        if (s[k].tag == PTL_IV_TENSORLIST) {
            for (int64_t j = 0; j < s[k].u.tl.n; j++, nr++) {
                ptl_set_grad_fn(s[k].u.tl.data[j], node, nr);
            }
            continue;
        }
        /* an output PTL_NONDIFF names (output_differentiability False) gets no history */
        int nondiff = k < 4 && op->id < PTL_OP_COUNT &&
                      (nondiff_args_by_op[op->id] & (PTL_SAVE_RESULT << k));
        if (s[k].tag == PTL_IV_TENSOR && ptl_dtype_is_differentiable(s[k].u.t->dtype) &&
            !nondiff) {
            ptl_set_grad_fn(s[k].u.t, node, nr);
        }
        nr++;
    }
    return 0;
}

/* PyTorch's throw_error_for_complex_autograd: the functional ops whose complex result it
 * refuses to differentiate, after the forward (their in-place forms record a node, as
 * PyTorch's do).  -1 with the error set for one of them, else 0. */
static int
complex_autograd_refused(const PtlOperator *op, const PtlIValue *s)
{
    static const struct {
        PtlOpId op;
        const char *name;
    } refused[] = {
        {PTL_OP_scatter_reduce_two, "scatter_reduce"},
        {PTL_OP_silu, "silu"},
        {PTL_OP_nan_to_num, "nan_to_num"},
        {PTL_OP_embedding, "embedding"},
        {PTL_OP_affine_grid_generator, "affine_grid_generator"},
        {PTL_OP__adaptive_avg_pool2d, "_adaptive_avg_pool2d"},   /* its empty complex output */
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (op->id == (int)refused[i].op && ptl_dtype_is_complex(s[0].u.t->dtype)) {
            return ptl_error_set(PTL_ERR_RUNTIME, "%s does not support automatic "
                                 "differentiation for outputs with complex dtype.",
                                 refused[i].name);
        }
    }
    return 0;
}

/* The autograd kernel of one call (Note [Autograd key]): refuse what cannot be recorded,
 * take the inputs' gradient edges, run the op below Autograd, then make the node, save what
 * its formula needs and give it to the outputs (an in-place op on a view rewrites the base's
 * history instead). */
static int
autograd_record(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, const PtlGradRow *row)
{
    const PtlSchema *sc = &op->schema;
    PtlIValue args[PTL_SCHEMA_MAX_ARGS];
    InplaceSelf ip = {0, 0, NULL};
    PtlNode *node = NULL;
    Inputs in;
    PtlEdge edges_inline[INPUTS_INLINE], *edges = edges_inline;
    int nedges = 0, rc = -1;

    if ((!collect_inputs(op, s, &in) && !in.failed) ||
        (row == NULL && (op->flags & PTL_OPF_NONDIFF))) {
        inputs_release(&in);
        return run_untracked(op, ks, s);
    }
    if (check_call(op, s, &in) < 0 || (row != NULL && check_saved_args(op, s) < 0) ||
        (sc->inplace && prepare_inplace(op, row, s[0].u.t, &ip) < 0)) {
        inputs_release(&in);
        ptl_xdecref(ip.orig);
        return -1;
    }
    if (in.n > INPUTS_INLINE && (edges = malloc(sizeof(PtlEdge) * (size_t)in.n)) == NULL) {
        inputs_release(&in);
        ptl_xdecref(ip.orig);
        return ptl_error_set(PTL_ERR_MEMORY, "%s: out of memory recording the inputs for autograd",
                             sc->name + 6);
    }
    memcpy(args, s, sizeof(PtlIValue) * (size_t)sc->nargs);
    /* edges come from the inputs as they are before the call, which keeps them alive (an
     * in-place op's self is also its output) */
    for (int i = 0; i < in.n; i++) {
        edges[i].fn = NULL;
        edges[i].input_nr = 0;
        if (in.t[i] != NULL && ptl_requires_grad(in.t[i])) {
            edges[i] = ptl_gradient_edge(in.t[i]);
        }
        nedges++;
        if (in.t[i] != NULL) {
            ptl_incref(in.t[i]);
        }
    }
    if (ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_AUTOGRAD), s) < 0) {
        goto done;
    }
    if (complex_autograd_refused(op, s) < 0) {
        ptl_ivalue_release(&s[0]);
        goto done;
    }
    if (!sc->inplace && sc->nrets == 1 && is_output_alias_of_input(&s[0], &in)) {
        rc = 0;   /* contiguous() of a contiguous tensor etc.: the input itself came back */
        goto done;
    }
    if ((node = make_node(op, row, args, s, &in, edges)) == NULL) {
        for (int k = 0; k < sc->nrets; k++) {
            ptl_ivalue_release(&s[k]);
        }
        goto done;
    }
    if (row != NULL) {
        save_variables(node, op, args, s, &ip);
        if (ptl_node_pack_saved(node) < 0) {
            for (int k = 0; k < sc->nrets; k++) {
                ptl_ivalue_release(&s[k]);
            }
            goto done;
        }
    }
    if (ip.on_view) {
        if (ptl_copy_slices_rebase(s[0].u.t, node) < 0) {
            ptl_ivalue_release(&s[0]);
            goto done;
        }
        rc = 0;
        goto done;
    }
    rc = set_history(op, s, node, &in);
done:
    for (int i = 0; i < in.n; i++) {
        ptl_xdecref(in.t[i]);
    }
    for (int i = 0; i < nedges; i++) {
        if (edges[i].fn != NULL) {
            ptl_node_decref(edges[i].fn);
        }
    }
    if (edges != edges_inline) {
        free(edges);
    }
    inputs_release(&in);
    if (node != NULL) {
        ptl_node_decref(node);
    }
    ptl_xdecref(ip.orig);
    return rc;
}

/* After an in-place op: when a node saved a tensor with self's version counter, remember
 * the op, where it was called and the version it left (Note [In-place provenance]). */
static int
note_inplace(const PtlOperator *op, const PtlIValue *s, int rc)
{
    PtlVersionCounter *vc;
    if (rc < 0 || !op->schema.inplace || s[0].tag != PTL_IV_TENSOR ||
        !(vc = s[0].u.t->version)->saved) {
        return rc;
    }
    vc->inplace_op = op->schema.name;
    vc->inplace_site = ptl_autograd_hooks.site != NULL ? ptl_autograd_hooks.site() : NULL;
    vc->inplace_version = atomic_load(&vc->version);
    return rc;
}

static int
autograd_kernel(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    return note_inplace(op, s, autograd_record(op, ks, s, rows_by_op[op->id]));
}

static int
autograd_fallback(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    const PtlGradRow *row = op->id < PTL_OP_COUNT ? rows_by_op[op->id] : NULL;
    if (row == NULL && op->kernels[PTL_KEY_COMPOSITE_IMPLICIT] != NULL) {
        /* a composite op is differentiated through the ops it calls (PyTorch registers
         * CompositeImplicitAutograd kernels for the Autograd key as well) */
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_AUTOGRAD), s);
    }
    return note_inplace(op, s, autograd_record(op, ks, s, row));
}

/* resize_ / resize_as_: PyTorch refuses any tensor that requires grad, in grad mode or not
 * (a resized tensor's history would describe other elements). */
static int
resize_autograd(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s)
{
    if (ptl_requires_grad(s[0].u.t)) {
        return ptl_error_set(PTL_ERR_RUNTIME, "cannot resize variables that require grad");
    }
    return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_AUTOGRAD), s);
}

static void
meta_free_hook(void *meta)
{
    PtlAutogradMeta *m = meta;
    if (m->grad != NULL) {
        ptl_decref(m->grad);
    }
    if (m->grad_fn != NULL) {
        ptl_node_decref(m->grad_fn);
    }
    if (m->py_hooks != NULL && ptl_autograd_hooks.free_tensor_hooks != NULL) {
        ptl_autograd_hooks.free_tensor_hooks(m->py_hooks);
    }
    ptl_post_acc_grad_hooks_free(m);
    free(m);
}

uint32_t
ptl_node_saves(const PtlNode *n)
{
    return n->op != NULL && n->op->id < PTL_OP_COUNT ? saves_by_op[n->op->id] : 0;
}

int
ptl_autograd_init(void)
{
    PtlKernelReg reg;
    for (int i = 0; i < PTL_OP_COUNT; i++) {
        const PtlSchema *sc = &ptl_op(i)->schema;
        is_view_op[i] = sc->nrets > 0 && !sc->inplace && sc->rets[0].alias_set != 0 &&
                        !sc->rets[0].alias_write;
    }
    for (int i = 0; i < ptl_grad_row_count; i++) {
        const PtlGradRow *row = &ptl_grad_rows[i];
        if (ptl_grad_save_mask(row->op, row->saves, &saves_by_op[row->op]) < 0) {
            return -1;
        }
        rows_by_op[row->op] = row;
        reg.op = row->op;
        reg.key = PTL_KEY_AUTOGRAD;
        reg.fn = autograd_kernel;
        if (ptl_dispatcher_register(&reg, 1, "derivatives.def") < 0) {
            return -1;
        }
    }
    for (int i = 0; i < ptl_nondiff_row_count; i++) {
        const PtlNondiffRow *row = &ptl_nondiff_rows[i];
        if (ptl_grad_save_mask(row->op, row->args, &nondiff_args_by_op[row->op]) < 0) {
            return -1;
        }
        nondiff_by_op[row->op] = row;
    }
    static const PtlKernelReg resize_regs[] = {
        {PTL_OP_resize_, PTL_KEY_AUTOGRAD, resize_autograd},
        {PTL_OP_resize_as_, PTL_KEY_AUTOGRAD, resize_autograd},
    };
    if (ptl_dispatcher_register(resize_regs, 2, "autograd_kernel.c") < 0) {
        return -1;
    }
    ptl_dispatcher_register_fallback(PTL_KEY_AUTOGRAD, autograd_fallback);
    ptl_autograd_meta_free = meta_free_hook;
    return 0;
}
