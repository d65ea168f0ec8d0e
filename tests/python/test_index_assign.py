"""Assignment through an index whose value has extra leading size-1 dimensions (PyTorch
strips them before broadcasting), and indexing with a range; Python numbers (complex ones
too) into every dtype; against NumPy, and PyTorch where it is installed."""
import numpy as np
import pytest

import pytorchlite as ptl

from helpers import assert_raises_like_torch, torch

CASES = [
    ("row", lambda m, x: x.__setitem__(0, m.arange(3.0).reshape(1, 3))),
    ("row_two_extra", lambda m, x: x.__setitem__(1, m.arange(3.0).reshape(1, 1, 3))),
    ("column", lambda m, x: x.__setitem__((slice(None), 1), m.full((1, 1, 2), 5.0))),
    ("broadcast", lambda m, x: x.__setitem__(0, m.ones(1, 1))),
    ("advanced", lambda m, x: x.__setitem__(([0, 1], 0), m.tensor([[7.0, 8.0]]))),
    ("all", lambda m, x: x.__setitem__(slice(None), m.ones(1, 2, 3) * 4)),
    ("range", lambda m, x: x.__setitem__(range(2), m.ones(1, 3))),
]


def numpy_assign(name):
    a = np.zeros((2, 3))
    expected = {
        "row": lambda: a.__setitem__(0, np.arange(3.0)),
        "row_two_extra": lambda: a.__setitem__(1, np.arange(3.0)),
        "column": lambda: a.__setitem__((slice(None), 1), 5.0),
        "broadcast": lambda: a.__setitem__(0, 1.0),
        "advanced": lambda: a.__setitem__(([0, 1], 0), [7.0, 8.0]),
        "all": lambda: a.__setitem__(slice(None), 4.0),
        "range": lambda: a.__setitem__(slice(0, 2), 1.0),
    }
    expected[name]()
    return a


@pytest.mark.parametrize("name,assign", CASES)
def test_assign_strips_leading_ones(name, assign):
    x = ptl.zeros(2, 3)
    assign(ptl, x)
    np.testing.assert_array_equal(x.numpy(), numpy_assign(name))
    if torch is not None:
        ref = torch.zeros(2, 3)
        assign(torch, ref)
        np.testing.assert_array_equal(x.numpy(), ref.numpy())


def test_assign_keeps_gradient_flowing():
    w = ptl.ones(3, requires_grad=True)
    y = ptl.zeros(2, 3)
    y[0] = (w * 2).reshape(1, 3)
    (y * ptl.arange(6.0).reshape(2, 3)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 2.0, 4.0])


def test_assign_shape_mismatch_still_raises():
    x = ptl.zeros(2, 3)
    with pytest.raises(RuntimeError):
        x[0] = ptl.ones(2, 3)


@pytest.mark.parametrize("r", [range(2), range(1, 6, 2), range(0), range(5, 0, -2)])
def test_index_with_range(r):
    a = np.arange(6) * 10
    got = ptl.tensor(a)[r]
    np.testing.assert_array_equal(got.numpy(), a[list(r)])
    assert got.dtype == ptl.int64
    if torch is not None:
        np.testing.assert_array_equal(got.numpy(), torch.tensor(a)[r].numpy())


def test_index_with_range_in_tuple():
    a = np.arange(12).reshape(3, 4)
    got = ptl.tensor(a)[range(1, 3), 0]
    np.testing.assert_array_equal(got.numpy(), a[[1, 2], 0])


# A Python complex assigned into a tensor (src/python/indexing.c's complex_value): a real
# dtype takes its real part when the imaginary part is 0 (bool: whether it is nonzero), and
# raises PyTorch's conversion error otherwise or when the part is out of range; float16 and
# bfloat16 take a number past their range as inf (half_rounded), a Python float too.
# (dtype, value, the element written or the error's type name)
NUMBER_INTO = [
    ("float32", 1.5 + 0j, 1.5), ("float32", 1 + 2j, "float"), ("float32", 1e39 + 0j, "float"),
    ("float64", 1e39 + 0j, 1e39), ("float64", -2j, "double"), ("float16", 1e39 + 0j, np.inf),
    ("float16", 1 + 1j, "double"), ("bfloat16", 3 + 0j, 3.0), ("int64", 1.5 + 0j, 1),
    ("int64", complex(float("nan"), 0), "int64_t"), ("int8", 300 + 0j, "int8_t"),
    ("uint8", 7 + 0j, 7), ("bool", 2j, True), ("bool", 0j, False),
    ("complex64", 1e39 + 0j, "c10::complex<float>"), ("complex64", 1 - 2j, 1 - 2j),
    ("complex128", 1e39 + 1j, 1e39 + 1j), ("float16", 70000.0, np.inf),
    ("float16", 1e39, np.inf), ("bfloat16", -1e39, -np.inf), ("float16", 65510.0, 65504.0),
]
WHERE = {"advanced": [0, 2], "slice": [1, 2], "mask": [0, 2]}


@pytest.mark.parametrize("dtype,value,want", NUMBER_INTO)
@pytest.mark.parametrize("where", list(WHERE))
def test_python_number_into_each_dtype(dtype, value, want, where):
    def put(m):
        x = m.zeros(4, dtype=getattr(m, dtype))
        key = {"advanced": m.tensor([0, 2]), "slice": slice(1, 3),
               "mask": m.tensor([True, False, True, False])}[where]
        x[key] = value
        return x
    if isinstance(want, str):
        assert_raises_like_torch(put, RuntimeError,
                                 f"value cannot be converted to type {want} without overflow")
        return
    expected = np.zeros(4, dtype=np.complex128)
    expected[WHERE[where]] = want
    for m in [ptl] + ([torch] if torch is not None else []):
        got = put(m)
        got = got.to(m.float32) if dtype == "bfloat16" else got
        np.testing.assert_array_equal(got.numpy().astype(np.complex128), expected)
