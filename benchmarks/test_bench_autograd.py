"""Autograd overhead: a tiny graph forward + backward, and one op on tensors that require grad,
against PyTorch in the same process (NumPy has no autograd, so these groups have no NumPy row)."""
import pytest

from _impls import TENSOR_IMPLS, lib


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_tiny_graph_forward_backward(benchmark, impl):
    benchmark.group = "z = (x * y + x).sum(); z.backward()"
    L = lib(impl)
    x = L.ones(4, requires_grad=True)
    y = L.ones(4, requires_grad=True)

    def step():
        z = (x * y + x).sum()
        z.backward()
    benchmark(step)


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_add_requires_grad(benchmark, impl):
    benchmark.group = "x + y, requires_grad=True, 1 float32"
    L = lib(impl)
    x = L.ones(1, requires_grad=True)
    y = L.ones(1, requires_grad=True)
    benchmark(lambda: x + y)
