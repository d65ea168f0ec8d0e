"""cat and stack of many tensors that require grad: forward values and every input's gradient
against NumPy.  The cases marked xfail fail today at the autograd limits named in their
reasons; they are strict, so they report as soon as the limits go."""
import numpy as np
import pytest

import pytorchlite as ptl

TOO_MANY_TEMPORARIES = pytest.mark.xfail(
    strict=True, raises=RuntimeError,
    reason="cat_backward keeps two temporaries per input in a formula Scope of SCOPE_MAX = 96 "
           "(src/autograd/formula.h): backward fails with 'derivative formula: too many "
           "temporaries' from 49 inputs")
TOO_MANY_INPUTS = pytest.mark.xfail(
    strict=True, raises=NotImplementedError,
    reason="the Autograd kernel records at most MAX_INPUTS = 64 tensor inputs per call "
           "(src/autograd/autograd_kernel.c): the forward raises NotImplementedError from 65")

CASES = [
    ("cat", 48, ()), ("cat", 49, TOO_MANY_TEMPORARIES), ("cat", 64, TOO_MANY_TEMPORARIES),
    ("cat", 65, TOO_MANY_INPUTS), ("cat", 300, TOO_MANY_INPUTS),
    ("stack", 49, ()), ("stack", 64, ()),
    ("stack", 65, TOO_MANY_INPUTS), ("stack", 300, TOO_MANY_INPUTS),
]


@pytest.mark.parametrize("op,n", [pytest.param(op, n, marks=m, id=f"{op}-{n}")
                                  for op, n, m in CASES])
def test_join_forward_and_backward(op, n):
    rng = np.random.default_rng(n)
    values = [rng.standard_normal((2, 3)) for _ in range(n)]
    weight = rng.standard_normal((2 * n, 3) if op == "cat" else (n, 2, 3))
    xs = [ptl.tensor(v, requires_grad=True) for v in values]
    y = getattr(ptl, op)(xs)
    reference = np.concatenate if op == "cat" else np.stack
    np.testing.assert_array_equal(y.detach().numpy(), reference(values))
    (y * ptl.tensor(weight)).sum().backward()
    expected = np.split(weight, n) if op == "cat" else list(weight)
    for x, g in zip(xs, expected):
        np.testing.assert_allclose(x.grad.numpy(), g.reshape(2, 3), rtol=0, atol=0)
