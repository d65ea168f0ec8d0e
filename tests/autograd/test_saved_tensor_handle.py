"""autograd.SavedTensor, the handle of one tensor a node saved (grad_fn._raw_saved_<name>,
ctx._raw_saved_tensors): unpack, data, unpack_hook and register_hooks(pack, unpack), which
packs that tensor now and unpacks it whenever backward (or _saved_<name>) reads it; with
PyTorch's errors (Note [Saved attributes], Note [Saved tensor hooks])."""
import numpy as np
import pytest

import golden
import pytorchlite as ptl
from helpers import torch


def _x(lib):
    return lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)


def test_raw_saved_attributes_are_handles():
    x = _x(ptl)
    z = x * x
    fn = z.grad_fn
    names = sorted(a for a in dir(fn) if a.startswith("_raw_saved_"))
    assert names == ["_raw_saved_other", "_raw_saved_self"]
    golden.assert_equal(names, lambda: sorted(
        a for a in dir((lambda x: x * x)(_x(torch)).grad_fn) if a.startswith("_raw_saved_")))
    r = fn._raw_saved_self
    assert isinstance(r, ptl.autograd.SavedTensor) and type(r).__name__ == "SavedTensor"
    assert r.unpack() is x and r.data is x and r.unpack_hook is None
    assert fn._raw_saved_self is not r           # a new handle per read, as in PyTorch
    e = x.exp()
    assert ptl.equal(e.grad_fn._raw_saved_result.unpack(), e)
    s = ptl.cat([x, x * 2])
    assert not hasattr(s.grad_fn, "_raw_saved_dim") and "_raw_saved_dim" not in dir(s.grad_fn)
    idx = x[ptl.tensor([0, 2])].grad_fn._raw_saved_indices
    assert isinstance(idx, tuple) and idx[0].unpack().tolist() == [0, 2]


def test_raw_saved_unknown_name():
    golden.assert_raises(lambda: (_x(ptl) * 2).grad_fn._raw_saved_foo,
                         lambda: (_x(torch) * 2).grad_fn._raw_saved_foo)


def test_register_hooks_packs_now_and_unpacks_on_use():
    calls = []

    def pack(t):
        calls.append(("pack", t.tolist()))
        return ("packed", t.detach().clone())

    def unpack(p):
        calls.append(("unpack", p[0]))
        return p[1] * 10

    x = _x(ptl)
    z = x * x
    r = z.grad_fn._raw_saved_self
    assert r.register_hooks(pack, unpack) is None
    assert calls == [("pack", [1.0, -2.0, 3.0])]
    assert r.data[0] == "packed" and r.unpack_hook is unpack
    assert z.grad_fn._saved_self.tolist() == [10.0, -20.0, 30.0]
    z.sum().backward()
    # d(self * other)/dx = other + self, with self read through the hooks
    np.testing.assert_array_equal(x.grad.numpy(), [11.0, -22.0, 33.0])
    assert calls[1:] == [("unpack", "packed"), ("unpack", "packed")]


def test_register_hooks_matches_torch():
    def run(lib):
        x = _x(lib)
        y = x.sin()
        y.grad_fn._raw_saved_self.register_hooks(lambda t: t * 2, lambda p: p + 1)
        y.sum().backward()
        return {"grad": x.grad}
    golden.assert_same_results(run, rtol=1e-12)


def test_register_hooks_on_custom_function_ctx():
    class Square(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, None, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            raw = ctx._raw_saved_tensors
            assert len(raw) == 3 and raw[1].unpack() is None
            a, _, b = ctx.saved_tensors
            return g * b, g * a

    x, y = _x(ptl), _x(ptl)
    out = Square.apply(x, y)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())

    class Hooked(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, None)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, _ = ctx.saved_tensors
            return g * a

    x = _x(ptl)
    out = Hooked.apply(x)
    state = ptl._C._node_state(out.grad_fn)
    raw = state.ctx._raw_saved_tensors
    raw[0].register_hooks(lambda t: t, lambda t: t * 3)
    with pytest.raises(RuntimeError) as info:
        raw[1].register_hooks(lambda t: t, lambda t: t)
    assert str(info.value) == ("Calling register_hooks on a saved tensor with value None is "
                               "forbidden")
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, -6.0, 9.0])


def _case(lib, case):
    x = _x(lib)
    z = x * x
    r = z.grad_fn._raw_saved_self
    if case == "construct":
        return lib.autograd.SavedTensor()
    if case == "twice":
        r.register_hooks(lambda t: t, lambda p: p)
        return r.register_hooks(lambda t: t, lambda p: p)
    if case == "freed":
        z.sum().backward()
        return r.register_hooks(lambda t: t, lambda p: p)
    if case == "freed_unpack":
        z.sum().backward()
        return r.unpack()
    if case == "under_hooks":
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda p: p):
            w = x * x
        return w.grad_fn._raw_saved_self.register_hooks(lambda t: t, lambda p: p)
    if case == "pack_raises":
        return r.register_hooks(lambda t: 1 / 0, lambda p: p)
    if case == "pack_in_place":
        e = x.exp()
        return e.grad_fn._raw_saved_result.register_hooks(lambda t: t.mul_(2), lambda p: p)
    if case == "unpack_not_tensor":
        r.register_hooks(lambda t: 5, lambda p: 7)
        return z.grad_fn._saved_self
    if case == "one_hook":
        return r.register_hooks(lambda t: t)
    return r.register_hooks(1, 2)


@pytest.mark.parametrize("case", ["construct", "twice", "freed", "freed_unpack", "under_hooks",
                                  "pack_raises", "pack_in_place", "unpack_not_tensor"])
def test_saved_tensor_errors(case):
    golden.assert_raises(lambda: _case(ptl, case), lambda: _case(torch, case))


@pytest.mark.parametrize("case", ["one_hook", "not_callable"])
def test_register_hooks_argument_errors(case):
    golden.assert_raises(lambda: _case(ptl, case), lambda: _case(torch, case),
                         compare=lambda ours, theirs: ours.split(":")[0] ==
                         theirs.split(":")[0])
