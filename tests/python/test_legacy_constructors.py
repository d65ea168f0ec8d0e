"""Legacy constructors: torch.Tensor(...), Tensor.new(...), the typed classes FloatTensor ...
BoolTensor, Tensor.type(), and tensor() from any sequence; values against NumPy, printed
names and errors against PyTorch where it is installed."""
import collections

import numpy as np
import pytest

import pytorchlite as ptl

from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

TYPES = [
    ("FloatTensor", np.float32), ("DoubleTensor", np.float64), ("HalfTensor", np.float16),
    ("BFloat16Tensor", None), ("LongTensor", np.int64), ("IntTensor", np.int32),
    ("ShortTensor", np.int16), ("CharTensor", np.int8), ("ByteTensor", np.uint8),
    ("BoolTensor", np.bool_),
]
DTYPE = {"FloatTensor": ptl.float32, "DoubleTensor": ptl.float64, "HalfTensor": ptl.float16,
         "BFloat16Tensor": ptl.bfloat16, "LongTensor": ptl.int64, "IntTensor": ptl.int32,
         "ShortTensor": ptl.int16, "CharTensor": ptl.int8, "ByteTensor": ptl.uint8,
         "BoolTensor": ptl.bool}


@pytest.mark.parametrize("name,np_dtype", TYPES)
def test_typed_class_call_forms(name, np_dtype):
    cls = getattr(ptl, name)
    assert cls.dtype == DTYPE[name]
    data = [[0, 1, 2], [3, 0, 5]]
    t = cls(data)
    assert type(t) is ptl.Tensor and t.dtype == DTYPE[name]
    if np_dtype is not None:
        np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=np_dtype))
    assert cls(2, 3).shape == (2, 3) and cls(2, 3).dtype == DTYPE[name]
    assert cls(ptl.Size([4])).shape == (4,)
    assert cls().shape == (0,) and cls().dtype == DTYPE[name]
    assert cls(np.arange(3)).tolist() == ptl.tensor([0, 1, 2], dtype=DTYPE[name]).tolist()


@pytest.mark.parametrize("name,np_dtype", TYPES)
def test_isinstance_and_type_name(name, np_dtype):
    cls = getattr(ptl, name)
    t = ptl.zeros(2, dtype=DTYPE[name])
    assert isinstance(t, cls)
    assert isinstance(t, ptl.Tensor)
    assert t.type() == "torch." + name
    others = [n for n, _ in TYPES if n != name]
    assert not any(isinstance(t, getattr(ptl, n)) for n in others)
    assert not isinstance([0.0], cls)
    assert not issubclass(cls, ptl.Tensor)
    assert repr(cls) == f"<class 'pytorchlite.{name}'>"


def test_isinstance_float_tensor():
    assert isinstance(ptl.zeros(2), ptl.FloatTensor)
    assert not isinstance(ptl.zeros(2, dtype=ptl.float64), ptl.FloatTensor)
    assert isinstance(ptl.nn.Parameter(ptl.zeros(2)), ptl.FloatTensor)


def test_type_conversions():
    x = ptl.tensor([1.5, -2.0])
    assert x.type(ptl.DoubleTensor).dtype == ptl.float64
    assert x.type("torch.IntTensor").tolist() == [1, -2]
    assert x.type(ptl.int64).dtype == ptl.int64
    assert x.type(ptl.FloatTensor) is x and x.type("torch.FloatTensor") is x
    with pytest.raises(ValueError, match=r"^invalid type: 'torch\.Foo'$"):
        x.type("torch.Foo")
    with pytest.raises(TypeError, match="^dtype must be a type, str, or dtype object$"):
        x.type(3)


def test_tensor_call_forms():
    t = ptl.Tensor([[1, 2], [3, 4]])
    assert t.dtype == ptl.float32
    np.testing.assert_array_equal(t.numpy(), np.array([[1, 2], [3, 4]], np.float32))
    assert ptl.Tensor(2, 3).shape == (2, 3)
    assert ptl.Tensor(3).shape == (3,)
    assert ptl.Tensor(ptl.Size([2, 3])).shape == (2, 3)
    assert ptl.Tensor(ptl.Size([])).shape == ()
    assert ptl.Tensor((2, 3)).tolist() == [2.0, 3.0]
    assert ptl.Tensor().shape == (0,) and ptl.Tensor().dtype == ptl.float32
    assert ptl.Tensor(range(3)).tolist() == [0.0, 1.0, 2.0]
    assert ptl.Tensor(2, device="cpu").shape == (2,)


def test_tensor_follows_default_dtype():
    ptl.set_default_dtype(ptl.float64)
    try:
        assert ptl.Tensor([1]).dtype == ptl.float64
        assert ptl.Tensor(2).dtype == ptl.float64
        assert ptl.Tensor().dtype == ptl.float64
    finally:
        ptl.set_default_dtype(ptl.float32)


def test_tensor_of_tensor_is_an_alias():
    a = ptl.zeros(2, dtype=ptl.int64)
    b = ptl.Tensor(a)
    assert b is not a and b.dtype == ptl.int64 and b.data_ptr() == a.data_ptr()
    w = ptl.zeros(2, requires_grad=True)
    v = ptl.Tensor(w)
    assert v.requires_grad and type(v.grad_fn).__name__ == "AliasBackward0"


def test_subclass_construction():
    class MyTensor(ptl.Tensor):
        pass

    assert type(MyTensor([1, 2])) is MyTensor
    assert type(MyTensor(2)) is MyTensor
    assert MyTensor().shape == (0,)


def test_new():
    x = ptl.zeros(2, dtype=ptl.int32)
    assert x.new([1.5]).dtype == ptl.int32 and x.new([1.5]).tolist() == [1]
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == ptl.int32
    assert x.new().shape == (0,) and x.new().dtype == ptl.int32
    assert x.new(ptl.zeros(3, dtype=ptl.int32)).shape == (3,)


def test_tensor_base_is_not_constructible():
    with pytest.raises(TypeError, match="^Cannot directly construct TensorBase; subclass it "
                                        "and then construct that instead.$"):
        ptl._C.TensorBase()


ERROR_CALLS = [
    lambda m: m.Tensor(2, "a"),
    lambda m: m.Tensor(2, 3.0),
    lambda m: m.Tensor(2, [3]),
    lambda m: m.FloatTensor(2, "a"),
    lambda m: m.Tensor("a"),
    lambda m: m.Tensor(2.5),
    lambda m: m.Tensor(None),
    lambda m: m.Tensor(True),
    lambda m: m.Tensor({1: 2}),
    lambda m: m.Tensor(x for x in [1]),
    lambda m: m.Tensor(-1),
    lambda m: m.FloatTensor(m.zeros(2, dtype=m.float64)),
    lambda m: m.zeros(2).new(m.zeros(2, dtype=m.int64)),
    lambda m: m.Tensor(m.zeros(1), device="cpu"),
]

ERRORS = [
    (TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error "
                "\"type must be tuple of ints,but got str\""),
    (TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error "
                "\"type must be tuple of ints,but got float\""),
    (TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error "
                "\"type must be tuple of ints,but got list\""),
    (TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error "
                "\"type must be tuple of ints,but got str\""),
    (TypeError, "new(): invalid data type 'str'"),
    (TypeError, "new(): data must be a sequence (got float)"),
    (TypeError, "new(): data must be a sequence (got NoneType)"),
    (TypeError, "new(): data must be a sequence (got bool)"),
    (TypeError, "new(): data must be a sequence (got dict)"),
    (TypeError, "new(): data must be a sequence (got generator)"),
    (RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    (TypeError, "expected TensorOptions(dtype=float, device=cpu, layout=Strided, requires_grad="
                "false (default), pinned_memory=false (default), memory_format=(nullopt)) (got "
                "TensorOptions(dtype=double, device=cpu, layout=Strided, requires_grad=false "
                "(default), pinned_memory=false (default), memory_format=(nullopt)))"),
    (TypeError, "expected TensorOptions(dtype=float, device=cpu, layout=Strided, requires_grad="
                "false (default), pinned_memory=false (default), memory_format=(nullopt)) (got "
                "TensorOptions(dtype=long int, device=cpu, layout=Strided, requires_grad=false "
                "(default), pinned_memory=false (default), memory_format=(nullopt)))"),
    (RuntimeError, "Legacy tensor constructor of the form torch.Tensor(tensor, device=device) "
                   "is not supported.  Use torch.tensor(...) or torch.as_tensor(...) instead."),
]


@pytest.mark.parametrize("call,expected", list(zip(ERROR_CALLS, ERRORS)))
def test_errors(call, expected):
    kind, message = expected
    with pytest.raises(kind) as info:
        call(ptl)
    assert str(info.value) == message


@needs_torch
@pytest.mark.parametrize("call", ERROR_CALLS)
def test_errors_as_torch(call):
    with pytest.raises(Exception) as ref:
        call(torch)
    with pytest.raises(Exception) as mine:
        call(ptl)
    assert type(mine.value) is type(ref.value)
    assert str(mine.value) == str(ref.value)


INVALID_COMBINATIONS = [
    (lambda m: m.Tensor([1], dtype=m.float64), "got (list, dtype=torch.dtype)"),
    (lambda m: m.Tensor(3, requires_grad=True), "got (int, requires_grad=bool)"),
    (lambda m: m.Tensor([1], [2]), "got (list, list)"),
    (lambda m: m.zeros(2).new(1, dtype=m.float64), "got (int, dtype=torch.dtype)"),
]


@pytest.mark.parametrize("call,got", INVALID_COMBINATIONS)
def test_invalid_combination(call, got):
    with pytest.raises(TypeError) as info:
        call(ptl)
    lines = str(info.value).splitlines()
    assert lines[0] == (f"new() received an invalid combination of arguments - {got}, but "
                        "expected one of:")
    assert [ln for ln in lines if ln.startswith(" * ")] == [
        " * (*, torch.device device = None)", " * (torch.Storage storage)",
        " * (Tensor other)", " * (tuple of ints size, *, torch.device device = None)",
        " * (object data, *, torch.device device = None)"]


@needs_torch
@pytest.mark.parametrize("call,got", INVALID_COMBINATIONS)
def test_invalid_combination_first_line_as_torch(call, got):
    with pytest.raises(TypeError) as ref:
        call(torch)
    with pytest.raises(TypeError) as mine:
        call(ptl)
    assert str(mine.value).splitlines()[0] == str(ref.value).splitlines()[0]


@needs_torch
def test_type_names_as_torch():
    for name, _ in TYPES:
        dt = DTYPE[name]
        ref = torch.zeros(1, dtype=getattr(torch, str(dt)[len("torch."):]))
        assert ptl.zeros(1, dtype=dt).type() == ref.type()
        assert getattr(ptl, name).__name__ == getattr(torch, name).__name__


class Rows:
    """A sequence that is neither a list nor a tuple."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


@pytest.mark.parametrize("data", [
    collections.deque([1.0, 2.5, -3.0]),
    range(5),
    [range(2), collections.deque([3, 4])],
    Rows([[1, 2], Rows([3, 4])]),
    collections.deque([]),
])
def test_tensor_from_any_sequence(data):
    def plain(d):
        return [plain(x) for x in d] if not isinstance(d, (int, float)) else d

    t = ptl.tensor(data)
    expected = np.array(plain(data))
    np.testing.assert_array_equal(t.numpy(), expected)
    if expected.size:
        assert t.dtype == (ptl.int64 if expected.dtype.kind == "i" else ptl.float32)
    if torch is not None:
        assert t.tolist() == torch.tensor(data).tolist()
        assert str(t.dtype) == str(torch.tensor(data).dtype)


def test_tensor_from_ragged_deque():
    with pytest.raises(ValueError, match=r"^expected sequence of length 2 at dim 1 \(got 1\)$"):
        ptl.tensor(collections.deque([[1, 2], [3]]))
