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


# ---- Note [Gradient layout contract]: a new .grad has its leaf's layout ----

def leaf(m, shape, layout, dtype):
    """A leaf of `shape`: contiguous, transposed (dense, column-major) or strided (every
    other column of a wider buffer, not dense)."""
    g = np.random.default_rng(3)
    if layout == "contiguous":
        base = m.tensor(g.standard_normal(shape), dtype=dtype)
    elif layout == "transposed":
        base = m.tensor(g.standard_normal(shape[::-1]), dtype=dtype).t()
    else:
        base = m.tensor(g.standard_normal((shape[0], 2 * shape[1])), dtype=dtype)[:, ::2]
    return base.detach().requires_grad_()


def contiguous_strides(shape):
    return (shape[1], 1)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("incoming", ["contiguous", "transposed", "expanded"])
def test_a_new_grad_takes_its_leafs_layout(lib, layout, incoming):
    m = ptl if lib == "ptl" else torch
    shape = (5, 3)
    x = leaf(m, shape, layout, m.float64)
    g = np.random.default_rng(4).standard_normal(shape)
    if incoming == "contiguous":
        upstream = m.tensor(g)
    elif incoming == "transposed":
        upstream = m.tensor(g.T.copy()).t()
    else:
        g = np.broadcast_to(g[:1], shape)
        upstream = m.tensor(g[:1].copy()).expand(*shape)
    # the identity's backward hands `upstream` itself to the leaf
    x.backward(upstream)
    want = x.stride() if layout != "strided" else contiguous_strides(shape)
    assert x.grad.stride() == want
    np.testing.assert_array_equal(x.grad.numpy(), g)
    assert x.grad.data_ptr() != upstream.data_ptr()


@pytest.mark.parametrize("lib", LIBS)
def test_a_grad_in_its_leafs_layout_is_taken_without_a_copy(lib):
    # mm's gradient for a transposed leaf comes out transposed (Note [Matrix product gradient
    # layout]): the leaf keeps that buffer
    m = ptl if lib == "ptl" else torch
    a = leaf(m, (6, 4), "transposed", m.float32)
    b = m.randn(4, 5)
    seen = []
    a.register_hook(lambda g: seen.append((g.data_ptr(), g.stride())))
    (a @ b).exp().sum().backward()
    assert seen == [(a.grad.data_ptr(), a.stride())]


def test_linear_weight_grad_is_contiguous_and_fused_step_applies():
    """nn.Linear passes weight.t() to addmm: its gradient arrives contiguous, as the
    parameter is, so SGD's fused step (contiguous operands only) runs on it."""
    model = ptl.nn.Linear(7, 3)
    model(ptl.randn(4, 7)).sum().backward()
    assert model.weight.grad.is_contiguous()
    opt = ptl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with ptl.profiler.profile() as prof:
        opt.step()
    names = [e.key for e in prof.key_averages()]
    assert "aten::_fused_sgd_step_" in names and "aten::add_" not in names
