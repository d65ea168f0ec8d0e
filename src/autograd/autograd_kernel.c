/* autograd_kernel.c -- the kernel under the Autograd dispatch key and its fallback.
 * Mirrors the generated VariableType kernels (torch/csrc/autograd/generated/VariableType*.cpp)
 * and autogradNotImplementedFallback.  See Note [Autograd key]. */
#include <stdlib.h>
#include <string.h>

#include "../aten/native/native.h"
#include "../c10/error.h"
#include "derivatives.h"

#define MAX_INPUTS 64

static const PtlGradRow *rows_by_op[PTL_OP_COUNT];

static int
not_implemented_apply(PtlNode *n, PtlTensorImpl **gi, PtlTensorImpl **go)
{
    (void)gi;
    (void)go;
    return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED, "the derivative for '%s%s%s' is not implemented.",
                         n->op->schema.name, n->op->schema.overload[0] ? "." : "",
                         n->op->schema.overload);
}

static const PtlNodeKind not_implemented_kind = {"NotImplemented", not_implemented_apply, 0};

/* The differentiable tensor inputs of a call, flattened (tensor lists element by element). */
typedef struct Inputs {
    int n;
    int dropped;                    /* tensors past MAX_INPUTS (refused when they need grad) */
    PtlTensorImpl *t[MAX_INPUTS];   /* borrowed; NULL for an absent optional tensor */
    int arg[MAX_INPUTS];            /* schema argument index */
} Inputs;

static int
collect_inputs(const PtlOperator *op, const PtlIValue *s, Inputs *in)
{
    const PtlSchema *sc = &op->schema;
    int any = 0;
    in->n = 0;
    in->dropped = 0;
    for (int i = 0; i < sc->nargs; i++) {
        const PtlArg *a = &sc->args[i];
        if (a->kwarg_only && a->alias_write) {
            continue;   /* out= */
        }
        if (a->kind == PTL_ARG_TENSOR) {
            PtlTensorImpl *t = s[i].tag == PTL_IV_TENSOR ? s[i].u.t : NULL;
            if (in->n == MAX_INPUTS) {
                in->dropped += t != NULL && ptl_requires_grad(t);
                continue;
            }
            in->arg[in->n] = i;
            in->t[in->n++] = t;
            any |= t != NULL && ptl_requires_grad(t);
        }
        else if (a->kind == PTL_ARG_TENSORLIST && s[i].tag == PTL_IV_TENSORLIST) {
            for (int64_t k = 0; k < s[i].u.tl.n; k++) {
                PtlTensorImpl *t = s[i].u.tl.data[k];
                if (in->n == MAX_INPUTS) {
                    in->dropped += t != NULL && ptl_requires_grad(t);
                    continue;
                }
                in->arg[in->n] = i;
                in->t[in->n++] = t;
                any |= t != NULL && ptl_requires_grad(t);
            }
        }
    }
    return any;
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
            memcpy(node->arg_lists + off, args[i].u.il.data, sizeof(int64_t) * (size_t)args[i].u.il.n);
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

static int
autograd_record(const PtlOperator *op, PtlDispatchKeySet ks, PtlIValue *s, const PtlGradRow *row)
{
    const PtlSchema *sc = &op->schema;
    PtlIValue args[PTL_SCHEMA_MAX_ARGS];
    PtlTensorImpl *orig_self = NULL;
    PtlNode *node = NULL;
    Inputs in;
    PtlEdge edges[MAX_INPUTS];
    int nedges = 0, on_view = 0;
    int64_t self_version = 0;

    if (!collect_inputs(op, s, &in) || (row == NULL && (op->flags & PTL_OPF_NONDIFF))) {
        return ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_AUTOGRAD), s);
    }
    if (in.dropped > 0) {
        /* never drop a gradient silently */
        return ptl_error_set(PTL_ERR_NOT_IMPLEMENTED,
                             "%s: autograd records at most %d tensor inputs per operator call; "
                             "combine the tensors in smaller groups (e.g. cat chunks of at most "
                             "%d, then cat the results)",
                             sc->name + 6, MAX_INPUTS, MAX_INPUTS);
    }
    if (sc->out_index >= 0) {
        return ptl_error_set(PTL_ERR_RUNTIME,
                             "%s(): functions with out=... arguments don't support automatic "
                             "differentiation, but one of the arguments requires grad.",
                             sc->name + 6);
    }
    if (sc->inplace) {
        PtlTensorImpl *self = s[0].u.t;
        self_version = atomic_load(&self->version->version);
        if (ptl_is_leaf(self) && ptl_requires_grad(self)) {
            return ptl_error_set(PTL_ERR_RUNTIME,
                                 "a leaf Variable that requires grad is being used in an "
                                 "in-place operation.");
        }
        /* a differentiable view: the base's history is rewritten (Note [CopySlices]); a
         * view that does not require grad of a base that does (detach()) is a plain tensor */
        if (self->base != NULL && (self->flags & PTL_TF_IS_VIEW) &&
            (ptl_requires_grad(self) || !ptl_requires_grad(self->base))) {
            if (ptl_is_leaf(self->base) && ptl_requires_grad(self->base)) {
                return ptl_error_set(PTL_ERR_RUNTIME,
                                     "a view of a leaf Variable that requires grad is being used "
                                     "in an in-place operation.");
            }
            on_view = 1;
        }
        if (row != NULL && (row->save & PTL_SAVE_ARG(0))) {
            /* the formula needs self as it was before the op changes it: a clone made
             * through the dispatcher, so it keeps self's history for double backward */
            PtlIValue cv[2] = {ptl_iv_tensor(self), ptl_iv_none()};
            if ((orig_self = ptl_call_tensor(PTL_OP_clone, cv)) == NULL) {
                return -1;
            }
        }
    }
    memcpy(args, s, sizeof(PtlIValue) * (size_t)sc->nargs);
    /* edges and input metadata come from the inputs as they are before the call */
    for (int i = 0; i < in.n; i++) {
        edges[i].fn = NULL;
        edges[i].input_nr = 0;
        if (in.t[i] != NULL && ptl_requires_grad(in.t[i])) {
            edges[i] = ptl_gradient_edge(in.t[i]);
        }
        nedges++;
    }
    /* keep inputs alive across the call: an in-place op's self is also its output */
    for (int i = 0; i < in.n; i++) {
        if (in.t[i] != NULL) {
            ptl_incref(in.t[i]);
        }
    }
    int rc = ptl_dispatcher_redispatch(op, ks & ptl_keyset_below(PTL_KEY_AUTOGRAD), s);
    if (rc < 0) {
        goto error;
    }
    if (!sc->inplace && sc->nrets == 1 && is_output_alias_of_input(&s[0], &in)) {
        goto done;   /* contiguous() of a contiguous tensor etc.: the input itself came back */
    }
    int nouts = 0;
    for (int k = 0; k < sc->nrets; k++) {
        nouts += s[k].tag == PTL_IV_TENSORLIST ? (int)s[k].u.tl.n : 1;
    }
    node = ptl_node_new(row ? &row->kind : &not_implemented_kind, nouts, in.n);
    if (node == NULL || keep_args(node, op, args) < 0) {
        for (int k = 0; k < sc->nrets; k++) {
            ptl_ivalue_release(&s[k]);
        }
        goto error;
    }
    node->op = op;
    for (int i = 0; i < in.n; i++) {
        node->next[i] = edges[i];
        edges[i].fn = NULL;
        if (node->next[i].fn != NULL) {
            node->needs |= 1u << (i < 31 ? i : 31);
        }
        if (in.t[i] != NULL) {
            PtlInputMeta *m = &node->input_meta[i];
            PtlTensorImpl *t = in.t[i];
            m->dtype = t->dtype;
            m->device = t->device;
            m->dim = t->dim;
            memcpy(m->sizes, t->sizes, sizeof(int64_t) * (size_t)t->dim);
        }
    }
    if (row != NULL) {
        int slot = 0;
        for (int i = 0; i < 16; i++) {
            if (!(row->save & PTL_SAVE_ARG(i))) {
                continue;
            }
            if (args[i].tag == PTL_IV_TENSORLIST) {
                continue;   /* saved last, below */
            }
            PtlTensorImpl *t = args[i].tag == PTL_IV_TENSOR ? args[i].u.t : NULL;
            if (i == 0 && orig_self != NULL) {
                t = orig_self;
            }
            ptl_saved_set(node, slot++, t, 0, 0);
            if (sc->inplace && i > 0 && t != NULL && t->version == args[0].u.t->version) {
                /* an input sharing self's storage (y.mul_(y)) is saved as it was before the
                 * op wrote it, so unpacking it raises, as in PyTorch */
                node->saved[slot - 1].version = self_version;
            }
        }
        if (row->save & PTL_SAVE_RESULT) {
            ptl_saved_set(node, slot++, s[0].u.t, 1, 0);
        }
        if (row->save & PTL_SAVE_RESULT1) {
            /* an integer output (indices) has no grad_fn, so it is saved as a plain tensor */
            ptl_saved_set(node, slot++, s[1].u.t, ptl_dtype_is_floating(s[1].u.t->dtype), 1);
        }
        if (row->save & PTL_SAVE_RESULT2) {
            ptl_saved_set(node, slot++, s[2].u.t, 1, 2);
        }
        /* a saved tensor list (index's Tensor?[] indices) comes after everything else, one
         * slot per element (NULL for None), so the slots of plain tensors keep their order */
        for (int i = 0; i < 16; i++) {
            if ((row->save & PTL_SAVE_ARG(i)) && args[i].tag == PTL_IV_TENSORLIST) {
                for (int64_t k = 0; k < args[i].u.tl.n && slot < PTL_NODE_MAX_SAVED; k++) {
                    ptl_saved_set(node, slot++, args[i].u.tl.data[k], 0, 0);
                }
            }
        }
    }
    if (on_view) {
        if (ptl_copy_slices_rebase(s[0].u.t, node) < 0) {
            ptl_ivalue_release(&s[0]);
            goto error;
        }
        goto done;
    }
    /* outputs take the node as their grad_fn (an in-place op rebases self's history) */
    for (int k = 0, nr = 0; k < sc->nrets; k++) {
        if (s[k].tag == PTL_IV_TENSOR) {
            if (ptl_dtype_is_floating(s[k].u.t->dtype)) {
                ptl_set_grad_fn(s[k].u.t, node, nr);
            }
            nr++;
        }
        else if (s[k].tag == PTL_IV_NONE) {
            nr++;   /* an undefined output (output_mask) keeps its output number */
        }
        else if (s[k].tag == PTL_IV_TENSORLIST) {
            for (int64_t j = 0; j < s[k].u.tl.n; j++, nr++) {
                ptl_set_grad_fn(s[k].u.tl.data[j], node, nr);
            }
        }
    }
done:
    for (int i = 0; i < in.n; i++) {
        ptl_xdecref(in.t[i]);
    }
    for (int i = 0; i < nedges; i++) {
        if (edges[i].fn != NULL) {
            ptl_node_decref(edges[i].fn);
        }
    }
    if (node != NULL) {
        ptl_node_decref(node);
    }
    ptl_xdecref(orig_self);
    return 0;
error:
    for (int i = 0; i < in.n; i++) {
        ptl_xdecref(in.t[i]);
    }
    for (int i = 0; i < nedges; i++) {
        if (edges[i].fn != NULL) {
            ptl_node_decref(edges[i].fn);
        }
    }
    if (node != NULL) {
        ptl_node_decref(node);
    }
    ptl_xdecref(orig_self);
    return -1;
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
    free(m);
}

int
ptl_autograd_init(void)
{
    PtlKernelReg reg;
    for (int i = 0; i < ptl_grad_row_count; i++) {
        const PtlGradRow *row = &ptl_grad_rows[i];
        rows_by_op[row->op] = row;
        reg.op = row->op;
        reg.key = PTL_KEY_AUTOGRAD;
        reg.fn = autograd_kernel;
        if (ptl_dispatcher_register(&reg, 1, "derivatives.def") < 0) {
            return -1;
        }
    }
    ptl_dispatcher_register_fallback(PTL_KEY_AUTOGRAD, autograd_fallback);
    ptl_autograd_meta_free = meta_free_hook;
    return 0;
}
