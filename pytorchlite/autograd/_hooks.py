"""Backward hooks: on tensors (register_hook, retain_grad, register_post_accumulate_grad_hook)
and on graph nodes (register_hook, register_prehook).  Mirrors torch/utils/hooks.py and the hook
parts of torch/_tensor.py and torch/csrc/autograd/python_hook.cpp.

Hooks live in _NodeState objects (src/python/autograd_python.h, Note [Node state]): a node's
state keeps its own hooks and the hooks of the non-leaf tensors it produced; a leaf keeps its
hooks in its autograd metadata.  The engine calls _run_pre before a node runs and _run_post
after, and only for nodes that have such state.

Order, as PyTorch: tensor hooks (in registration order), then retain_grad, then the node's
pre-hooks; after the node ran, its post-hooks; for a leaf, post-accumulate-grad hooks after
.grad was updated."""
import itertools
import weakref
from collections import OrderedDict

from .. import _C

_ids = itertools.count()


class RemovableHandle:
    """Returned by every register_*hook call; remove() unregisters the hook."""

    __slots__ = ("hooks_dict_ref", "id", "__weakref__")

    def __init__(self, hooks_dict):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(_ids)

    def remove(self):
        hooks = self.hooks_dict_ref()
        if hooks is not None and self.id in hooks:
            del hooks[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _hook_dict(owner, name, key=None):
    """owner.<name> (an OrderedDict), or owner.<name>[key] for per-output dicts; created."""
    d = getattr(owner, name, None)
    if d is None:
        d = {} if key is not None else OrderedDict()
        setattr(owner, name, d)
    if key is not None:
        d = d.setdefault(key, OrderedDict())
    return d


def _add(hooks, fn):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


# ---- tensor methods (installed on Tensor by pytorchlite/_tensor.py) ----

def register_hook(self, hook):
    """hook(grad) -> None or a replacement gradient, called when self's gradient is computed
    (for a leaf: before it is accumulated into .grad)."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        hooks = _hook_dict(_C._tensor_hooks(self), "pre_hooks")
    else:
        hooks = _hook_dict(_C._node_state(self.grad_fn), "tensor_pre_hooks", self.output_nr)
    _C._track_tensor(self)   # the hook may refer back to self (Note [Tensor GC])
    return _add(hooks, hook)


def register_post_accumulate_grad_hook(self, hook):
    """hook(tensor), called after a leaf's .grad was updated."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    _C._track_tensor(self)
    return _add(_hook_dict(_C._tensor_hooks(self), "post_acc_hooks"), hook)


def retain_grad(self):
    """Makes backward fill .grad of this non-leaf tensor too (a no-op on leaves)."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or _C._retains_grad(self):
        return
    state = _C._node_state(self.grad_fn)
    if getattr(state, "retain", None) is None:
        state.retain = {}
    state.retain[self.output_nr] = weakref.ref(self)
    _C._retains_grad(self, True)


def retains_grad(self):
    return _C._retains_grad(self)


# ---- node methods (installed on every grad_fn type) ----

def _node_register_hook(self, fn):
    """fn(grad_inputs, grad_outputs) -> None or replacement grad_inputs, after the node ran."""
    return _add(_hook_dict(_C._node_state(self), "post_hooks"), fn)


def _node_register_prehook(self, fn):
    """fn(grad_outputs) -> None or replacement grad_outputs, before the node runs."""
    return _add(_hook_dict(_C._node_state(self), "pre_hooks"), fn)


# ---- engine callbacks ----

def _hook_name(hook):
    return getattr(hook, "__name__", "<unknown>")


def _check_single_result(original, result, hook):
    """PyTorch's check_single_result: a hook may not change a gradient's type, device or
    size, nor replace a missing gradient."""
    if result is None:
        return
    if original is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(result, _C.TensorBase):
        raise TypeError(f"expected Variable or None (got {type(result).__name__})")
    if result.dtype != original.dtype or result.device.type != original.device.type:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was "
                           f"{original.type()} got {result.type()})")
    if result.shape != original.shape:
        raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")


def _check_result(original, result, hook):
    """PyTorch's check_result for hooks that return a tuple of gradients."""
    result = tuple(result)
    if len(result) != len(original):
        raise RuntimeError(f"hook '{_hook_name(hook)}' has returned an incorrect number of "
                           f"values (got {len(result)}, but expected {len(original)})")
    for old, new in zip(original, result):
        _check_single_result(old, new, hook)
    return result


def _call_tensor_hooks(hooks, grad):
    for fn in list(hooks.values()):
        if grad is None:
            break
        new = fn(grad)
        if new is not None:
            _check_single_result(grad, new, fn)
            grad = new
    return grad


def _run_pre(state, leaf_hooks, grads):
    """Runs before a node: returns replacement grads (a list) or None when unchanged."""
    grads = list(grads)
    changed = False
    if leaf_hooks is not None and getattr(leaf_hooks, "pre_hooks", None):
        grads[0] = _call_tensor_hooks(leaf_hooks.pre_hooks, grads[0])
        changed = True
    if state is not None:
        for nr, hooks in (getattr(state, "tensor_pre_hooks", None) or {}).items():
            if hooks and nr < len(grads):
                grads[nr] = _call_tensor_hooks(hooks, grads[nr])
                changed = True
        for nr, ref in (getattr(state, "retain", None) or {}).items():
            t = ref()
            if t is not None and grads[nr] is not None and _C._retains_grad(t):
                old = t.grad
                _C._set_grad_raw(t, grads[nr].detach().clone() if old is None
                                 else (old + grads[nr]).detach())
        for fn in list((getattr(state, "pre_hooks", None) or {}).values()):
            new = fn(tuple(grads))
            if new is not None:
                grads = list(_check_result(tuple(grads), new, fn))
                changed = True
    return grads if changed else None


def _run_post(state, leaf_hooks, leaf, grad_inputs, grad_outputs):
    """Runs after a node: returns replacement grad_inputs or None."""
    result = None
    if state is not None:
        for fn in list((getattr(state, "post_hooks", None) or {}).values()):
            new = fn(grad_inputs, grad_outputs)
            if new is not None:
                grad_inputs = result = _check_result(grad_inputs, new, fn)
    if leaf_hooks is not None:
        for fn in list((getattr(leaf_hooks, "post_acc_hooks", None) or {}).values()):
            fn(leaf)
    return result


_C._set_hook_runners(_run_pre, _run_post)
_C._Node.register_hook = _node_register_hook
_C._Node.register_prehook = _node_register_prehook
