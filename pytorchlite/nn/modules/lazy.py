"""Lazy modules (torch/nn/modules/lazy.py): parameters whose shapes come from the first
input.  LazyModuleMixin registers a forward pre-hook that calls initialize_parameters(input),
removes itself and turns the module into cls_to_become (LazyLinear becomes Linear)."""
import itertools

from ...autograd import no_grad
from ..parameter import UninitializedTensorMixin


class LazyModuleMixin:
    cls_to_become = None
    _inferred_size = None   # the attribute the first input sets: in_features, in_channels, ...

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)
        self._load_hook = self.register_load_state_dict_pre_hook(_lazy_load_hook)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Module's, keeping uninitialized tensors as they are (they cannot be detached): a
        state_dict taken before the first forward holds them, and loads into a lazy module."""
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            if t is not None and name not in self._non_persistent_buffers_set:
                lazy = isinstance(t, UninitializedTensorMixin)
                destination[prefix + name] = t if lazy or keep_vars else t.detach()

    def has_uninitialized_params(self):
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, UninitializedTensorMixin) for t in tensors)

    def reset_parameters(self):
        """The eager module's initialization, once the first input has given the shapes (the
        eager __init__ calls it before that, on empty tensors)."""
        if not self.has_uninitialized_params() and getattr(self, self._inferred_size) != 0:
            super().reset_parameters()

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


def _lazy_load_hook(module, state_dict, prefix, *_):
    """load_state_dict's pre-hook: an uninitialized tensor whose saved value is initialized
    takes its shape, so that the values load into it (an uninitialized one stays so)."""
    with no_grad():
        for name, t in itertools.chain(module._parameters.items(), module._buffers.items()):
            saved = state_dict.get(prefix + name)
            if isinstance(t, UninitializedTensorMixin) and saved is not None and \
                    not isinstance(saved, UninitializedTensorMixin):
                t.materialize(saved.shape)


def _materialize(module, shapes):
    """Gives the uninitialized parameters and buffers named in shapes their shape, then the
    module its initial values (reset_parameters)."""
    with no_grad():
        for name, shape in shapes.items():
            t = getattr(module, name, None)
            if isinstance(t, UninitializedTensorMixin):
                t.materialize(shape)
        module.reset_parameters()
