"""Complex tensors at the Python edge: complex(t), float(t), int(t), bool(t), Tensor.type()'s
legacy names, dtype.to_real()/to_complex() and nn.Module.to(complex dtype), as PyTorch's."""
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

VALUES = [1 + 2j, -0.5j, 3.25 + 0j, 0j, -2 - 0j, complex("nan+1j"), complex("inf-infj")]


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:   # compared with torch's exception type and message
        return type(e).__name__, str(e)
    return "ok", r


def _same(a, b):
    if a[0] != "ok" or b[0] != "ok":
        return a == b
    if isinstance(a[1], complex) or isinstance(a[1], float):
        return np.array_equal(np.array(a[1]), np.array(b[1]), equal_nan=True)
    return a == b


@torch_ref
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("value", VALUES, ids=str)
@pytest.mark.parametrize("conv", [complex, float, int, bool])
def test_scalar_conversions_match_torch(conv, value, dtype):
    ours = _outcome(lambda: conv(ptl.tensor(value, dtype=getattr(ptl, dtype))))
    theirs = _outcome(lambda: conv(torch.tensor(value, dtype=getattr(torch, dtype))))
    assert _same(ours, theirs), (ours, theirs)


def test_complex_of_real_and_many_elements():
    assert complex(ptl.tensor(2.5)) == 2.5 + 0j and complex(ptl.tensor(3)) == 3 + 0j
    assert complex(ptl.tensor([1j])) == 1j
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        complex(ptl.ones(2, dtype=ptl.complex64))


def test_type_names():
    x = ptl.tensor([1 + 2j, 3j])
    assert x.type() == "torch.ComplexFloatTensor"
    assert x.cdouble().type() == "torch.ComplexDoubleTensor"
    y = x.type("torch.ComplexDoubleTensor")
    assert y.dtype == ptl.complex128 and y.tolist() == [1 + 2j, 3j]
    assert x.type(ptl.complex128).dtype == ptl.complex128
    assert x.cdouble().type("torch.ComplexFloatTensor").dtype == ptl.complex64
    assert ptl.ones(2).type("torch.ComplexFloatTensor").tolist() == [1 + 0j, 1 + 0j]


def test_dtype_to_real_and_to_complex():
    assert ptl.complex64.to_real() == ptl.float32 and ptl.complex128.to_real() == ptl.float64
    assert ptl.float32.to_real() == ptl.float32 and ptl.int64.to_real() == ptl.int64
    assert ptl.float32.to_complex() == ptl.complex64
    assert ptl.float64.to_complex() == ptl.complex128
    assert ptl.bfloat16.to_complex() == ptl.complex64
    assert ptl.complex128.to_complex() == ptl.complex128
    with pytest.raises(RuntimeError, match="^Unknown Complex ScalarType for Long$"):
        ptl.int64.to_complex()
    with pytest.raises(RuntimeError, match="^Unknown Complex ScalarType for Bool$"):
        ptl.bool.to_complex()
    with pytest.raises(RuntimeError, match="complex32"):
        ptl.float16.to_complex()


@torch_ref
def test_dtype_conversions_match_torch():
    for name in ("float32", "float64", "bfloat16", "int64", "bool", "complex64", "complex128"):
        assert str(getattr(ptl, name).to_real()) == str(getattr(torch, name).to_real())
        ours = _outcome(lambda: str(getattr(ptl, name).to_complex()))
        theirs = _outcome(lambda: str(getattr(torch, name).to_complex()))
        assert ours == theirs


def test_module_to_complex():
    m = ptl.nn.Linear(2, 3)
    m.register_buffer("count", ptl.tensor(4))
    with pytest.warns(UserWarning, match="^Complex modules are a new feature"):
        m.to(ptl.complex64)
    assert m.weight.dtype == ptl.complex64 and m.bias.dtype == ptl.complex64
    assert m.count.dtype == ptl.int64   # an integer buffer keeps its dtype
    x = ptl.tensor([[1 + 1j, 2j]], dtype=ptl.complex64)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    np.testing.assert_allclose(m(x).detach().numpy(), x.numpy() @ w.T + b, rtol=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m.to(ptl.float64)   # back to real: the parameters lose their imaginary parts
    assert m.weight.dtype == ptl.float64
    assert [str(w.message) for w in caught] == \
        ["Casting complex values to real discards the imaginary part"] * 2
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes, but got "
                                        "desired dtype=torch.int32"):
        m.to(ptl.int32)
