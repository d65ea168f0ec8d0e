"""nn.Parameter and nn.Buffer (torch/nn/parameter.py)."""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor that a Module registers as a parameter when assigned as an attribute.  Its
    arithmetic gives plain tensors (no __torch_function__: Note [Torch function])."""
    __torch_function__ = _C._disabled_torch_function_impl

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
    """Marks a tensor as a buffer when assigned to a Module attribute (persistent by default).
    Its arithmetic gives plain tensors, as PyTorch's (whose Buffer(t) is t itself)."""
    __torch_function__ = _C._disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C.tensor([])
        t = Tensor._make_subclass(cls, data, data.requires_grad)
        t.persistent = persistent
        return t


def _uninitialized_allowed():
    names = ("__hash__", "size", "copy_", "is_complex", "is_floating_point", "half", "float",
             "double", "char", "short", "int", "long", "cuda", "cpu", "to", "get_device")
    return {getattr(Tensor, n) for n in names if hasattr(Tensor, n)}


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (lazy modules): materialize() gives
    it storage of the shape the first input implies and turns it into cls_to_become."""
    __slots__ = ()
    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        device = self.data.device if device is None else device
        dtype = self.data.dtype if dtype is None else dtype
        self.data = _C._functions["empty"](tuple(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Only the calls that do not read the values (size, copy_, to, the dtype
        conversions...) work before materialize(); others raise PyTorch's ValueError."""
        if func in _uninitialized_allowed() or type(func).__name__ == "method-wrapper":
            return super().__torch_function__(func, types, args, kwargs or {})
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {func}. This error happens when "
            "you are using a `LazyModule` or explicitly manipulating "
            f"`torch.nn.parameter.{cls.__name__}` objects. When using LazyModules Call "
            "`forward` with a dummy batch to initialize the parameters before calling torch "
            "functions")

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        return memo[id(self)]


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        data = _C._functions["empty"](0, device=device, dtype=dtype)
        return Tensor._make_subclass(cls, data, requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A lazy module's buffer; persistent=False keeps it out of state_dict (as
    Module.register_buffer's flag), once assigned to a module attribute."""
    __slots__ = ()
    cls_to_become = Tensor
    persistent = True

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        data = _C._functions["empty"](0, device=device, dtype=dtype)
        return Tensor._make_subclass(cls if persistent else _NonPersistentUninitializedBuffer,
                                     data, requires_grad)


class _NonPersistentUninitializedBuffer(UninitializedBuffer):
    """UninitializedBuffer(persistent=False).  The flag is the class's: tensors carry no
    __dict__, and materialize() turns the buffer into a plain Tensor in place, which needs
    the Tensor's layout (PyTorch's sets an attribute on the instance)."""
    __slots__ = ()
    persistent = False

    def __repr__(self):
        return "<UninitializedBuffer>"
