"""ModuleTracker: which modules are running, forward or backward (torch.utils.module_tracker).

`parents` is the set of fully qualified names of the modules whose forward (or backward) is
running, always with "Global"; a top module is named by its class, a child by its parent's
name, a dot and its attribute name ("Sequential.0").  Forward: process-wide module pre- and
post-forward hooks add and remove the name.  Backward: a multi-grad hook on the module's
outputs adds the name when their gradients arrive, one on its inputs removes it when
theirs are computed, and the end of the backward pass resets the set to {"Global"}.
"""
import weakref

from .. import _C
from .._tensor import Tensor
from ..autograd.graph import register_multi_grad_hook
from ..autograd.variable import Variable
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]


class ModuleTracker:
    def __init__(self):
        self.parents = {"Global"}
        self._known_modules = weakref.WeakKeyDictionary()
        self._seen_modules = weakref.WeakSet()
        self._has_callback = False
        self._hooks = []

    @property
    def is_bw(self):
        """Whether a backward pass is running."""
        return _C._current_graph_task_id() != -1

    def _reset_at_end_of_backward(self):
        if self._has_callback:
            return

        def callback():
            self.parents = {"Global"}
            self._has_callback = False

        Variable._execution_engine.queue_callback(callback)
        self._has_callback = True

    def _name(self, mod):
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._name(child)
            self._seen_modules.add(mod)
        return name

    def _enter(self, name, backward):
        def fn(*args):
            if backward:
                self._reset_at_end_of_backward()
            self.parents.add(name)
        return fn

    def _leave(self, name):
        def fn(*args):
            self.parents.discard(name)
        return fn

    def _hook_grads(self, values, fn):
        tensors = [a for a in tree_flatten(values)[0]
                   if isinstance(a, Tensor) and a.requires_grad]
        if tensors:
            self._hooks.append(register_multi_grad_hook(tensors, fn))

    def _pre_forward(self, mod, args):
        name = self._name(mod)
        self.parents.add(name)
        self._hook_grads(args, self._leave(name))

    def _post_forward(self, mod, args, output):
        name = self._name(mod)
        self.parents.discard(name)
        self._hook_grads(output, self._enter(name, True))

    def __enter__(self):
        self._pre_handle = register_module_forward_pre_hook(self._pre_forward)
        self._post_handle = register_module_forward_hook(self._post_forward)
        return self

    def __exit__(self, *args):
        self._pre_handle.remove()
        self._post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
