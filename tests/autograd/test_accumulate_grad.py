"""AccumulateGrad takes the incoming gradient without copying only when nothing else holds
it (PyTorch's use_count rule): a buffer that two leaves receive, or that the caller passed
to backward(), is copied, so a later accumulation cannot change another tensor."""
import numpy as np
import pytest

import pytorchlite as ptl
import golden
from helpers import torch, torch_ref

LIBS = ["ptl", pytest.param("torch", marks=torch_ref)]


def two_leaves_one_gradient(m):
    # add's backward hands one tensor to both leaves
    x = m.ones(3, requires_grad=True)
    y = m.ones(3, requires_grad=True)
    for _ in range(2):
        (x + y).exp().backward(m.ones(3))
    return x, y


def test_two_leaves_do_not_share_a_gradient_buffer():
    x, y = two_leaves_one_gradient(ptl)
    assert x.grad.data_ptr() != y.grad.data_ptr()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2 * np.exp(2.0)), rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), np.full(3, 2 * np.exp(2.0)), rtol=1e-6)


def test_two_leaves_match_torch():
    golden.assert_same_results(lambda lib: {f"grad {k}": x.grad for k, x in
                                            enumerate(two_leaves_one_gradient(lib))},
                               rtol=1e-6, atol=0)


@pytest.mark.parametrize("lib", LIBS)
def test_a_caller_gradient_is_copied(lib):
    m = ptl if lib == "ptl" else torch
    g = m.ones(3)
    x = m.ones(3, requires_grad=True)
    x.backward(g)
    assert x.grad.data_ptr() != g.data_ptr()
    g.add_(5)
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("lib", LIBS)
def test_a_fresh_gradient_is_still_taken_without_a_copy(lib):
    # nothing else holds mm's gradient once the leaf's hook has returned: the leaf keeps
    # that very buffer
    m = ptl if lib == "ptl" else torch
    a = m.randn(64, 64, requires_grad=True)
    b = m.randn(64, 64)
    seen = []
    a.register_hook(lambda g: seen.append(g.data_ptr()))
    (a @ b).exp().sum().backward()
    assert seen == [a.grad.data_ptr()]
