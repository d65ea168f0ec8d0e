/* autograd_python.h -- the Python side of autograd nodes: node state (hooks, metadata,
 * custom-Function context), the engine callbacks that run Python hooks, and custom
 * Function nodes.  Mirrors torch/csrc/autograd/{python_hook.h, python_function.h,
 * python_anomaly_mode.h}.
 *
 * Note [Node state]
 * ~~~~~~~~~~~~~~~~~
 * node->py_state is a _NodeState object (a plain object with a __dict__) that the node owns.
 * Python code (pytorchlite/autograd/_hooks.py, function.py) keeps in it what it needs:
 * `metadata`, `pre_hooks`, `post_hooks`, `tensor_pre_hooks` ({output_nr: hooks}),
 * `retain` ({output_nr: weakref to the tensor}), `ctx` (a custom Function's context).
 * The state knows its node only weakly (`node`, cleared when the node dies), so a context
 * that refers to its state forms a cycle the garbage collector can see and free.
 * A leaf's hooks live in PtlAutogradMeta.py_hooks (a _NodeState too, with `pre_hooks` and
 * `post_acc_hooks`), so they outlive the leaf's AccumulateGrad node, which is weak. */
#ifndef PTL_PYTHON_AUTOGRAD_PYTHON_H
#define PTL_PYTHON_AUTOGRAD_PYTHON_H

#include "ptlpy.h"

#include "../autograd/autograd.h"

typedef struct PtlPyNodeState {
    PyObject_HEAD
    PtlNode *node;        /* borrowed; NULL once the node died */
    PyObject *dict;
} PtlPyNodeState;

/* The node's state object (borrowed), created when `create` is set; NULL (error set) on
 * failure, or NULL without error when absent and not created. */
PyObject *ptlpy_node_state(PtlNode *n, int create);
/* Wraps n (STOLEN) in its Python object. */
PyObject *ptlpy_wrap_node(PtlNode *n);
/* The node behind a grad_fn object (borrowed); NULL with TypeError. */
PtlNode *ptlpy_node_from(PyObject *o);
/* A tuple of the gradients grads[0..n) (borrowed impls; None for an undefined one); NULL with
 * an exception set. */
PyObject *ptlpy_grads_tuple(PtlTensorImpl *const *grads, int n);
/* A SavedTensor for slot `slot` of n (which it keeps alive); NULL with an error set. */
PyObject *ptlpy_saved_tensor_new(PtlNode *n, int slot);
/* A tuple of SavedTensors for n's slots from `first` on; NULL with an error set. */
PyObject *ptlpy_saved_tensors(PtlNode *n, int first);
/* Saved slot `slot` of n as a new object (None for an undefined tensor), version-checked
 * and through its unpack hook; NULL with an error set. */
PyObject *ptlpy_saved_unpack(PtlNode *n, int slot);
int ptlpy_hooks_init(PyObject *module);
int ptlpy_function_init(PyObject *module);

#endif
