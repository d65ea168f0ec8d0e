"""nn.Parameter and nn.Buffer (torch/nn/parameter.py)."""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter when assigned as an attribute."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C.tensor([])
        return Tensor._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a Module attribute (persistent by default)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.tensor([])
        t = Tensor._make_subclass(cls, data, data.requires_grad)
        t._persistent = persistent
        return t
