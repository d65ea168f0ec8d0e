"""torch.autograd.Variable: the pre-0.4 wrapper, kept because code such as torchviz still
imports it.  Variable(t) is a tensor sharing t's data (detached), and isinstance(x, Variable)
asks whether x is a Tensor, as in PyTorch."""
from .. import _C


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.TensorBase)


class Variable(metaclass=VariableMeta):
    """Variable(data, requires_grad=False): data's tensor, detached, requiring grad or not."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            from .. import empty
            return empty(0).requires_grad_(requires_grad)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
