"""Lazy modules (torch/nn/modules/lazy.py): parameters whose shapes come from the first
input.  LazyModuleMixin registers a forward pre-hook that calls initialize_parameters(input),
removes itself and turns the module into cls_to_become (LazyLinear becomes Linear)."""
from ...autograd import no_grad
from ..parameter import UninitializedTensorMixin


class LazyModuleMixin:
    cls_to_become = None
    _inferred_size = None   # the attribute the first input sets: in_features, in_channels, ...

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

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


def _materialize(module, shapes):
    """Gives the uninitialized parameters and buffers named in shapes their shape, then the
    module its initial values (reset_parameters)."""
    with no_grad():
        for name, shape in shapes.items():
            t = getattr(module, name, None)
            if isinstance(t, UninitializedTensorMixin):
                t.materialize(shape)
        module.reset_parameters()
