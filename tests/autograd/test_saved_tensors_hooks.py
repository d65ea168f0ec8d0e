"""autograd.graph.saved_tensors_hooks, save_on_cpu and disable_saved_tensors_hooks (Note
[Saved tensor hooks]): every tensor a node made inside saves goes through pack, backward and
grad_fn._saved_* get unpack's result; nesting, custom Functions, errors with PyTorch's types
and messages, and nothing leaks.  Gradients are compared with NumPy in float64 and checked
with gradcheck; the same script runs on PyTorch where it is installed."""
import gc
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES


def ids(m):
    return m.__name__


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_pack_and_unpack_see_every_saved_tensor(lib):
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t.detach().clone())
        return ("box", t)

    def unpack(box):
        unpacked.append(box[0])
        return box[1]

    with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x * x.exp()).sum()
    assert len(packed) == 3     # exp saves its result, mul saves both inputs
    y.backward()
    assert len(unpacked) == 3
    xv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xv) * (1 + xv), rtol=1e-12)


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_unpack_result_is_used_by_backward_and_saved_attributes(lib):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 10,
                                                lambda p: p):
        y = x * w
    assert y.grad_fn._saved_self.tolist() == [10.0, 20.0]
    y.sum().backward()
    assert x.grad.tolist() == [30.0, 40.0] and w.grad.tolist() == [10.0, 20.0]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_innermost_hooks_apply_and_nesting_unwinds(lib):
    x = lib.ones(2, requires_grad=True)
    seen = []
    outer = lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append("outer") or t,
                                                   lambda t: t)
    inner = lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append("inner") or t,
                                                   lambda t: t)
    with outer:
        with inner:
            x.sin()
        x.cos()
    x.tan()
    assert seen == ["inner", "outer"]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_packed_tensors_skip_the_version_check(lib):
    x = lib.ones(2, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
        y = x * x
    with lib.no_grad():
        x.mul_(3)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]    # the copy made at pack time, not x's new value


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_retain_graph_unpacks_again_and_custom_functions_use_the_hooks(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = lib.tensor([1.5, -2.0], dtype=lib.float64, requires_grad=True)
    calls = []
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: calls.append(1) or t):
        y = Square.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert len(calls) == 2 and x.grad.tolist() == [6.0, -8.0]


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_save_on_cpu(lib):
    x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
    with lib.autograd.graph.save_on_cpu():
        y = (x.sigmoid() * x.log()).sum()
    y.backward()
    xv = np.array([0.5, 1.0, 2.0])
    s = 1 / (1 + np.exp(-xv))
    np.testing.assert_allclose(x.grad.numpy(), s * (1 - s) * np.log(xv) + s / xv, rtol=1e-12)


def test_gradcheck_under_hooks():
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    w = ptl.randn(4, 2, dtype=ptl.float64, requires_grad=True)

    def f(a, b):
        with ptl.autograd.graph.saved_tensors_hooks(lambda t: (t.device, t.clone()),
                                                    lambda p: p[1].to(p[0])):
            return (a @ b).tanh()

    assert ptl.autograd.gradcheck(f, (x, w))
    with ptl.autograd.graph.save_on_cpu():
        assert ptl.autograd.gradgradcheck(lambda a: (a * a).sin(), (x,))


@pytest.mark.parametrize("lib", LIBRARIES, ids=ids)
def test_errors(lib):
    G = lib.autograd.graph
    x = lib.ones(2, requires_grad=True)
    with G.saved_tensors_hooks(lambda t: 5, lambda p: p):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="^Output of saved tensor unpack_hook expected to be a "
                       "Tensor but got result of type int$"):
        y.backward()
    with G.saved_tensors_hooks(lambda t: 1 / 0, lambda p: p):
        with pytest.raises(ZeroDivisionError):
            x * x
    with G.saved_tensors_hooks(lambda t: t, lambda p: 1 / 0):
        y = x * x
    with pytest.raises(ZeroDivisionError):
        y.sum().backward()
    h = x * 2
    with G.saved_tensors_hooks(lambda t: t.detach().mul_(2), lambda p: p):
        with pytest.raises(RuntimeError, match="^A saved tensor pack hook is modifying its input "
                           "in place. Tensors provided as input to pack hook cannot be modified "
                           "by in-place operations as this can lead to unexpected "
                           "side-effects. Please open an issue if you need to perform in-place "
                           "operations on the input to a pack hook.$"):
            h * h
    with G.disable_saved_tensors_hooks("no hooks in here"):
        with pytest.raises(RuntimeError, match="^no hooks in here$"):
            with G.save_on_cpu():
                pass
        with G.disable_saved_tensors_hooks("inner message"):
            with pytest.raises(RuntimeError, match="^inner message$"):
                G.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="^no hooks in here$"):
            G.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with G.save_on_cpu():       # enabled again
        (x * x).sum().backward()


def test_hooks_do_not_leak():
    class Box:
        pass

    x = ptl.ones(2, requires_grad=True)
    (x * 1).sum().backward()       # x.grad exists before counting
    gc.collect()
    counts = ptl._C._live_counts()
    boxes = []

    def pack(t):
        b = Box()
        b.t = t
        boxes.append(b)
        return b

    for _ in range(20):
        with ptl.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
            y = (x * x).exp().sum()
        y.backward()
    del y
    gc.collect()
    boxes.append(Box())      # held by the list alone: the reference count to expect
    assert len(boxes) == 61 and len({sys.getrefcount(b) for b in boxes}) == 1
    boxes.clear()                  # the boxes held the saved tensors
    gc.collect()
    assert ptl._C._live_counts() == counts
