"""torch.autograd.Variable: the pre-0.4 wrapper, kept because code such as torchviz still
imports it.  Variable(t) is a tensor sharing t's data (detached), and isinstance(x, Variable)
asks whether x is a Tensor, as in PyTorch."""
from .. import _C


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _C.TensorBase)


class _ImperativeEngine:
    """Variable._execution_engine: the engine's Python face (torch._C._EngineBase).  The
    backward passes themselves go through torch.autograd.backward and grad."""

    def queue_callback(self, callback):
        """Runs callback() once the running backward pass has finished (Note [Final callbacks]
        in src/python/autograd_object.c); RuntimeError outside a backward pass."""
        _C._queue_callback(callback)

    def is_checkpoint_valid(self):
        """False inside a backward pass that computes the gradients of given inputs
        (torch.autograd.grad, backward(inputs=...)), where reentrant checkpointing cannot
        run."""
        return _C._is_checkpoint_valid()


class Variable(metaclass=VariableMeta):
    """Variable(data, requires_grad=False): data's tensor, detached, requiring grad or not."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            from .. import empty
            return empty(0).requires_grad_(requires_grad)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


Variable._execution_engine = _ImperativeEngine()
