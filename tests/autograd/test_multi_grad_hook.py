"""autograd.graph.register_multi_grad_hook: fn runs once per backward pass, with every
tensor's gradient ("all") or the first one ("any"); compared with PyTorch (torch_ref)."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref


def run(lib, mode):
    """The calls fn gets over two backward passes of a graph both tensors feed."""
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)
    x, y = a * 2, b * 3
    calls = []

    def fn(grads):
        if mode == "any":
            calls.append(grads.tolist())
        else:
            calls.append([g.tolist() for g in grads])

    handle = lib.autograd.graph.register_multi_grad_hook((x, y), fn, mode=mode)
    (x.sum() * 5 + y.sum() * 7).backward(retain_graph=True)
    (x.sum() + y.sum()).backward()
    handle.remove()
    return calls, a.grad.tolist()


@pytest.mark.parametrize("mode", ["all", "any"])
def test_once_per_backward(mode):
    calls, grad = run(ptl, mode)
    assert len(calls) == 2
    if mode == "all":
        assert calls == [[[5.0, 5.0], [7.0]], [[1.0, 1.0], [1.0]]]
    np.testing.assert_array_equal(grad, [12.0, 12.0])


@torch_ref
@pytest.mark.parametrize("mode", ["all", "any"])
def test_like_torch(mode):
    assert run(ptl, mode) == run(torch, mode)


def test_bad_mode():
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        ptl.autograd.graph.register_multi_grad_hook([], print, mode="some")
