"""Assignment through an index whose value has extra leading size-1 dimensions (PyTorch
strips them before broadcasting), and indexing with a range; against NumPy, and PyTorch
where it is installed."""
import numpy as np
import pytest

import pytorchlite as ptl

from helpers import torch

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
