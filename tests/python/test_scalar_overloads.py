"""Overload choice between a Scalar and a Tensor parameter (src/python/arg_parse.c): a 0-dim
tensor stands for a number only when it does not require grad, and a Tensor overload is tried
before its Scalar twin, as PyTorch's argument parser and its sort_overloads decide.
Regressions: fill_(v), masked_fill(m, v), index_fill(d, i, v) with a 0-dim v that requires
grad took the Scalar overload, so v silently got no gradient; fill_, clamp, clip and lerp
with a 0-dim v that does not require grad took the Scalar overload where PyTorch takes the
Tensor one (other node names)."""
import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import torch, torch_ref

MASK = np.array([True, False, True, True])
W = np.array([1.0, 2.0, 3.0, 4.0])

# (name, call, d(sum(W * out))/dv)
CASES = [
    ("fill_", lambda x, v: x.clone().fill_(v), W.sum(), "FillBackward3"),
    ("masked_fill", lambda x, v: x.masked_fill(ptl.tensor(MASK), v), W[MASK].sum(),
     "MaskedFillBackward1"),
    ("masked_fill_", lambda x, v: x.clone().masked_fill_(ptl.tensor(MASK), v), W[MASK].sum(),
     "MaskedFillBackward1"),
    ("index_fill", lambda x, v: x.index_fill(0, ptl.tensor([0, 2]), v), W[[0, 2]].sum(),
     "IndexFillBackward1"),
]


@pytest.mark.parametrize("name,call,expected,node", CASES, ids=[c[0] for c in CASES])
def test_value_that_requires_grad_takes_the_tensor_overload(name, call, expected, node):
    x = ptl.zeros(4, dtype=ptl.float64)
    v = ptl.tensor(2.5, dtype=ptl.float64, requires_grad=True)
    out = call(x, v)
    assert out.grad_fn.name() == node
    (out * ptl.tensor(W)).sum().backward()
    assert v.grad.item() == expected


def test_value_that_does_not_require_grad_gives_the_same_values():
    x = ptl.zeros(3, dtype=ptl.float64, requires_grad=True)
    y = x.clone().fill_(ptl.tensor(2.0))
    np.testing.assert_array_equal(y.detach().numpy(), np.full(3, 2.0))
    z = x.masked_fill(ptl.tensor([True, False, True]), ptl.tensor(1.5))
    np.testing.assert_array_equal(z.detach().numpy(), [1.5, 0.0, 1.5])


def _zero_dim_names(lib):
    """Node names for a 0-dim value that does not require grad, and for numbers."""
    x = lib.zeros(3, requires_grad=True)
    v = lib.tensor(0.5)
    calls = [lambda: x.clone().fill_(v), lambda: lib.clamp(x, v), lambda: x.clamp(max=v),
             lambda: lib.clamp(x, v, 1.0), lambda: x.clip(v, v), lambda: x.clone().clamp_(v),
             lambda: x.clone().clip_(max=v), lambda: lib.lerp(x, x, v),
             lambda: x.clone().lerp_(x, v), lambda: x.masked_fill(lib.tensor([True]), v),
             lambda: x.clone().fill_(2.0), lambda: lib.clamp(x, 0.5), lambda: lib.lerp(x, x, 0.5)]
    return [type(call().grad_fn).__name__ for call in calls]


ZERO_DIM_NAMES = ["FillBackward3", "ClampBackward0", "ClampBackward0", "ClampBackward1",
                  "ClampBackward0", "ClampBackward0", "ClampBackward0", "LerpBackward1",
                  "LerpBackward1", "MaskedFillBackward1", "FillBackward2", "ClampBackward1",
                  "LerpBackward0"]


def test_zero_dim_value_takes_the_tensor_overload():
    assert _zero_dim_names(ptl) == ZERO_DIM_NAMES
    x = ptl.tensor([0.0, 1.0, 2.0], dtype=ptl.float64, requires_grad=True)
    y = ptl.lerp(x, ptl.full((3,), 4.0, dtype=ptl.float64), ptl.tensor(0.25, dtype=ptl.float64))
    np.testing.assert_allclose(y.detach().numpy(), [1.0, 1.75, 2.5])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 0.75))
    c = ptl.clamp(x, ptl.tensor(0.5, dtype=ptl.float64), ptl.tensor(1.5, dtype=ptl.float64))
    np.testing.assert_array_equal(c.detach().numpy(), [0.5, 1.0, 1.5])


@torch_ref
def test_zero_dim_value_node_names_match_torch():
    assert _zero_dim_names(torch) == ZERO_DIM_NAMES


def test_node_names_match_torch_when_the_value_requires_grad():
    def names(lib):
        v = lib.tensor(2.0, requires_grad=True)
        x = lib.zeros(3, requires_grad=True)
        return [type(x.clone().fill_(v).grad_fn).__name__,
                type(x.masked_fill(lib.tensor([True, False, True]), v).grad_fn).__name__,
                type(x.index_fill(0, lib.tensor([0, 2]), v).grad_fn).__name__]
    assert names(ptl) == golden(lambda: names(torch))
