"""Legacy tensor constructors and the typed tensor classes: torch.Tensor(...), Tensor.new(...),
torch.FloatTensor ... torch.BoolTensor (torch/csrc/utils/tensor_new.cpp legacy_tensor_ctor and
torch/csrc/tensor/python_tensor.cpp).

The typed classes are not Tensor subclasses, as in PyTorch: calling one builds a plain Tensor
of its dtype, and isinstance(t, FloatTensor) asks whether t is a float32 CPU tensor."""
import numbers

from . import _C
from ._size import Size

# ORDER DTYPE as _C: legacy name and the C++ type name PyTorch prints in TensorOptions
_LEGACY = [
    (_C.bool, "Bool", "bool"), (_C.uint8, "Byte", "unsigned char"),
    (_C.int8, "Char", "signed char"), (_C.int16, "Short", "short int"),
    (_C.int32, "Int", "int"), (_C.int64, "Long", "long int"),
    (_C.float16, "Half", "c10::Half"), (_C.bfloat16, "BFloat16", "c10::BFloat16"),
    (_C.float32, "Float", "float"), (_C.float64, "Double", "double"),
]
_NAME = {dt: name for dt, name, _ in _LEGACY}
_CPP_NAME = {dt: cpp for dt, _, cpp in _LEGACY}
_DTYPE_BY_NAME = {name + "Tensor": dt for dt, name, _ in _LEGACY}
# complex tensors have legacy type names (Tensor.type()), but no typed classes in torch's namespace
_NAME.update({_C.complex64: "ComplexFloat", _C.complex128: "ComplexDouble"})
_CPP_NAME.update({_C.complex64: "c10::complex<float>", _C.complex128: "c10::complex<double>"})
_DTYPE_BY_NAME.update({"ComplexFloatTensor": _C.complex64,
                       "ComplexDoubleTensor": _C.complex128})

_SIGNATURES = (
    " * (*, torch.device device = None)\n"
    " * (torch.Storage storage)\n"
    " * (Tensor other)\n"
    " * (tuple of ints size, *, torch.device device = None)\n"
    " * (object data, *, torch.device device = None)\n")


def type_name(dtype, device):
    """'torch.FloatTensor', 'torch.cuda.LongTensor', ...: what Tensor.type() returns."""
    where = "" if device.type == "cpu" else device.type + "."
    return f"torch.{where}{_NAME[dtype]}Tensor"


def parse_type(t):
    """(dtype, device type or None) from what Tensor.type(t) accepts: a typed class, a dtype or
    a name such as 'torch.cuda.FloatTensor'."""
    if isinstance(t, LegacyTensorType):
        return t.dtype, "cpu"
    if isinstance(t, _C.dtype):
        return t, None
    if isinstance(t, str):
        parts = t.split(".")
        if parts[0] == "torch" and len(parts) in (2, 3) and parts[-1] in _DTYPE_BY_NAME:
            if len(parts) == 2:
                return _DTYPE_BY_NAME[parts[-1]], "cpu"
            if parts[1] == "cuda":
                return _DTYPE_BY_NAME[parts[-1]], "cuda"
        raise ValueError(f"invalid type: '{t}'")
    raise TypeError("dtype must be a type, str, or dtype object")


def _options(dtype):
    return (f"TensorOptions(dtype={_CPP_NAME[dtype]}, device=cpu, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _describe(v):
    if isinstance(v, _C.dtype):
        return "torch.dtype"
    if isinstance(v, _C.device):
        return "torch.device"
    return "Tensor" if isinstance(v, _C.TensorBase) else type(v).__name__


def _invalid(args, kwargs):
    got = [_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()]
    return TypeError(f"new() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n{_SIGNATURES}")


def _is_int(v):
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def legacy_new(dtype, device, args, kwargs, *, check_other):
    """A new tensor from the legacy call forms: () empty, (Tensor other) an alias of other,
    (*sizes) or (torch.Size) uninitialised, (data) a copy of a sequence.  dtype and device are
    the defaults (device= overrides the latter); check_other makes `other` match dtype
    (typed classes and Tensor.new(); torch.Tensor(other) takes any dtype)."""
    if set(kwargs) - {"device"}:
        raise _invalid(args, kwargs)
    if "device" in kwargs and kwargs["device"] is not None:
        device = _C.device(kwargs["device"])
    if not args:
        return _C._op("aten::empty")([0], dtype=dtype, device=device)
    first = args[0]
    if isinstance(first, _C.TensorBase):
        if len(args) > 1:
            raise _invalid(args, kwargs)
        if "device" in kwargs:
            raise RuntimeError("Legacy tensor constructor of the form torch.Tensor(tensor, "
                               "device=device) is not supported.  Use torch.tensor(...) or "
                               "torch.as_tensor(...) instead.")
        if check_other and first.dtype != dtype:
            raise TypeError(f"expected {_options(dtype)} (got {_options(first.dtype)})")
        return _C._op("aten::alias")(first)
    if _is_int(first) or (isinstance(first, Size) and len(args) == 1):
        sizes = first if isinstance(first, Size) else args
        for pos, s in enumerate(sizes, 1):
            if not _is_int(s):
                raise TypeError(f"new(): argument 'size' failed to unpack the object at pos "
                                f"{pos} with error \"type must be tuple of ints,but got "
                                f"{type(s).__name__}\"")
        return _C._op("aten::empty")([int(s) for s in sizes], dtype=dtype, device=device)
    if len(args) > 1:
        raise _invalid(args, kwargs)
    if isinstance(first, (str, bytes, dict)) or not (
            hasattr(first, "__len__") and hasattr(first, "__getitem__")):
        if isinstance(first, str):
            raise TypeError("new(): invalid data type 'str'")
        raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")
    return _C.tensor(first, dtype=dtype, device=device)


class LegacyTensorType(type):
    """Metaclass of FloatTensor ... BoolTensor: calling one builds a CPU tensor of its dtype,
    and isinstance() compares dtype and device."""

    def __call__(cls, *args, **kwargs):
        return legacy_new(cls.dtype, _C.device("cpu"), args, kwargs, check_other=True)

    def __instancecheck__(cls, obj):
        return (isinstance(obj, _C.TensorBase) and obj.dtype == cls.dtype
                and obj.device.type == "cpu")


def _make_type(dtype, name):
    return LegacyTensorType(name + "Tensor", (), {
        "__module__": "pytorchlite", "__slots__": (), "dtype": dtype, "is_cuda": False,
        "is_sparse": False, "__doc__": f"Legacy constructor of {dtype} CPU tensors."})


FloatTensor = _make_type(_C.float32, "Float")
DoubleTensor = _make_type(_C.float64, "Double")
HalfTensor = _make_type(_C.float16, "Half")
BFloat16Tensor = _make_type(_C.bfloat16, "BFloat16")
LongTensor = _make_type(_C.int64, "Long")
IntTensor = _make_type(_C.int32, "Int")
ShortTensor = _make_type(_C.int16, "Short")
CharTensor = _make_type(_C.int8, "Char")
ByteTensor = _make_type(_C.uint8, "Byte")
BoolTensor = _make_type(_C.bool, "Bool")

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor",
    "HalfTensor", "IntTensor", "LongTensor", "ShortTensor",
]
