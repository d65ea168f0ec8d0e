"""Views of a base that did not require grad (regenerated after an in-place op on the base),
views made in no_grad / inference mode or by multi-output ops (PyTorch's errors), detach()
and .data (not views), and `x.grad = x[:]`-style cycles that the GC must free.  Every case
runs under PyTorch and pytorchlite on the same NumPy inputs and must agree."""
import gc
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.autograd import gradcheck, gradgradcheck
import golden
from helpers import torch


def gname(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def w_leaf(lib, n=2, seed=0):
    vals = np.random.default_rng(seed).standard_normal(n)
    return lib.tensor(vals.tolist(), dtype=lib.float64, requires_grad=True)


def weights(lib, n):
    return lib.tensor(np.arange(1.0, n + 1.0).tolist(), dtype=lib.float64)


# ---- differentiable views of a base that did not require grad ----

def _base_inplace(lib):
    w = w_leaf(lib)
    x = lib.zeros(2, dtype=lib.float64)
    v = x[:]
    x.add_(w)
    out = (v * weights(lib, 2)).sum()
    out.backward()
    return v.requires_grad, gname(v), gname(x), w.grad.tolist()


def _view_inplace_twice(lib):
    w = w_leaf(lib)
    x = lib.zeros(3, dtype=lib.float64)
    v = x[:2]
    v.mul_(1)
    v.add_(w)
    (x * weights(lib, 3)).sum().backward()
    return gname(x), gname(v), w.grad.tolist()


def _view_of_view(lib):
    w = w_leaf(lib, 4)
    x = lib.zeros(4, dtype=lib.float64)
    v = x.view(2, 2)
    u = v[1]
    x.mul_(2).add_(w)
    (u * weights(lib, 2)).sum().backward()
    return gname(u), gname(v), u._base is x, w.grad.tolist()


def _sibling_write(lib):
    w = w_leaf(lib)
    x = lib.zeros(3, dtype=lib.float64)
    v, v2 = x[:2], x[1:]
    x[:2].add_(w)
    (v * weights(lib, 2)).sum().backward(retain_graph=True)
    g1 = w.grad.tolist()
    w.grad = None
    (v2 * weights(lib, 2)).sum().backward()
    return gname(v), gname(v2), g1, w.grad.tolist()


def _transposed_ties(lib):
    # a non-contiguous view and a base written through a broadcast value (ties in max)
    w = w_leaf(lib, 3)
    x = lib.zeros(2, 3, dtype=lib.float64)
    v = x.t()
    x.add_(w.abs())
    v.max().backward()
    return gname(v), w.grad.tolist()


def _requires_grad_later(lib):
    x = lib.zeros(3)
    v = x[:2]
    x.requires_grad_()
    return gname(v), v.requires_grad, v.is_leaf


def _integer_view(lib):
    x = lib.zeros(2, dtype=lib.int64)
    v = x[:]
    x.add_(1)
    return gname(v), v.requires_grad


def _integer_view_grad_value(lib):
    x = lib.zeros(2, dtype=lib.int64)
    x[:].add_(w_leaf(lib))


def _inplace_without_grad(lib):
    w = w_leaf(lib)
    x = lib.zeros(2)
    v = x[:]
    with lib.no_grad():
        x.add_(w.float())
    return gname(v), v.requires_grad, gname(x)


# ---- views made in no_grad / inference mode ----

def _nograd_view_indirect(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
    x.add_(w_leaf(lib).float())
    return v.requires_grad, gname(v)


def _nograd_view_is_leaf(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
    x.add_(w_leaf(lib).float())
    return v.is_leaf


def _nograd_view_used(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
    x.add_(w_leaf(lib).float())
    return v * 2


def _nograd_view_direct(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
    v.add_(w_leaf(lib).float())


def _nograd_sibling_direct(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
        u = x[:1]
    u.add_(w_leaf(lib, 1).float())
    return gname(v)


def _nograd_view_of_grad_base(lib):
    x = lib.zeros(2, requires_grad=True).clone()
    with lib.no_grad():
        v = x[:]
    return gname(v), v.requires_grad, v.is_leaf


def _nograd_view_of_grad_base_inplace(lib):
    x = lib.zeros(2, requires_grad=True).clone()
    with lib.no_grad():
        v = x[:]
    x.add_(w_leaf(lib).float())
    return gname(v)


def _nograd_view_of_leaf_direct(lib):
    x = lib.zeros(2, requires_grad=True)
    with lib.no_grad():
        v = x[:]
    v.mul_(2)


def _nograd_view_of_leaf_both_nograd(lib):
    x = lib.zeros(2, requires_grad=True)
    with lib.no_grad():
        v = x[:]
        v.mul_(2)
    return gname(v)


def _nograd_view_value_without_grad(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
    x.add_(1)
    return gname(v), v.requires_grad


def _nograd_both(lib):
    x = lib.zeros(2)
    with lib.no_grad():
        v = x[:]
        x.add_(w_leaf(lib).float())
    return gname(v), v.requires_grad, gname(x)


def _nograd_then_view_of_view(lib):
    x = lib.zeros(3)
    with lib.no_grad():
        v = x[:]
    u = v[:2]
    u.add_(w_leaf(lib).float())


def _inference_indirect(lib):
    x = lib.zeros(2)
    with lib.inference_mode():
        v = x[:]
    x.add_(w_leaf(lib).float())
    return gname(v)


def _inference_direct(lib):
    x = lib.zeros(2)
    with lib.inference_mode():
        v = x[:]
    v.add_(w_leaf(lib).float())


def _inference_value_without_grad(lib):
    x = lib.zeros(2)
    with lib.inference_mode():
        v = x[:]
    x.add_(1)
    return gname(v), v.requires_grad


# ---- detach() and .data ----

def _detach_not_a_view(lib):
    x = lib.zeros(2)
    d = x.detach()
    d.add_(w_leaf(lib).float())
    return gname(x), x.requires_grad, gname(d), d._base is None, x._version


def _detach_bumps_version(lib):
    y = lib.zeros(3, requires_grad=True).clone()
    v = y[:2]
    d = y.detach()
    d.add_(1)
    return y._version, gname(v), gname(y)


def _data_not_a_view(lib):
    x = lib.zeros(2)
    d = x.data
    d.add_(w_leaf(lib).float())
    return gname(x), x.requires_grad, gname(d), d._base is None


def _data_own_version(lib):
    x = lib.zeros(3)
    v = x[:2]
    x.data.add_(lib.ones(3))
    return gname(v), x._version, x.tolist()


def _detach_of_view(lib):
    x = lib.zeros(3)
    v = x[:2]
    d = v.detach()
    d.add_(w_leaf(lib).float())
    return gname(x), gname(v), gname(d)


def _view_of_detach(lib):
    x = lib.zeros(3)
    d = x.detach()
    v = d[:2]
    v.add_(w_leaf(lib).float())
    return gname(x), gname(v), gname(d)


# ---- multi-output views ----

def _unbind_indirect(lib):
    x = lib.zeros(2, 2)
    a, _ = x.unbind()
    x.add_(lib.ones(2, 2, requires_grad=True))
    return gname(a)


def _unbind_direct(lib):
    x = lib.zeros(2, 2)
    a, _ = x.unbind()
    a.add_(w_leaf(lib).float())


def _unbind_direct_grad_base(lib):
    x = lib.zeros(2, 2, requires_grad=True).clone()
    a, _ = x.unbind()
    a.mul_(2)


def _split_direct(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    a, _ = x.split(2)
    a.mul_(2)


def _split_single(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    (a,) = x.split(4)
    a.mul_(2)


def _split_with_sizes_direct(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    a, _ = x.split_with_sizes([1, 3])
    a.mul_(2)


def _chunk_indirect(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    a, _ = x.chunk(2)
    x.mul_(2)
    return gname(a)


def _chunk_sibling(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    _, b = x.chunk(2)
    b.mul_(2)


def _view_of_split_output(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    a, _ = x.split(2)
    a[:1].mul_(2)


def _split_in_nograd(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    with lib.no_grad():
        a, _ = x.split(2)
    a.mul_(2)


def _split_output_written_in_nograd(lib):
    x = lib.zeros(4, requires_grad=True).clone()
    a, _ = x.split(2)
    with lib.no_grad():
        a.mul_(2)
    return gname(a)


def _split_without_grad(lib):
    x = lib.zeros(4)
    a, _ = x.split(2)
    a.mul_(2)
    return gname(a), gname(x)


def _split_outputs_used(lib):
    w = w_leaf(lib, 4)
    a, b = (w * 1).split(2)
    (a * weights(lib, 2) + b).sum().backward()
    return gname(a), w.grad.tolist()


# ---- x.grad set to a view of x or to a tensor computed from x ----

def _grad_is_own_view(lib):
    x = lib.zeros(3, requires_grad=True)
    x.grad = x[:]
    return x.grad._base is x


def _grad_is_own_detach(lib):
    x = lib.zeros(3, requires_grad=True)
    x.grad = x.detach()
    return x.grad._base is None


def _grad_has_graph(lib):
    x = lib.zeros(3, requires_grad=True)
    x.grad = x * 2
    return gname(x.grad)


def _grad_is_self(lib):
    x = lib.zeros(3, requires_grad=True)
    x.grad = x


CASES = [_base_inplace, _view_inplace_twice, _view_of_view, _sibling_write, _transposed_ties,
         _requires_grad_later, _integer_view, _integer_view_grad_value, _inplace_without_grad,
         _nograd_view_indirect, _nograd_view_is_leaf, _nograd_view_used, _nograd_view_direct,
         _nograd_sibling_direct, _nograd_view_of_grad_base, _nograd_view_of_grad_base_inplace,
         _nograd_view_of_leaf_direct, _nograd_view_of_leaf_both_nograd,
         _nograd_view_value_without_grad, _nograd_both, _nograd_then_view_of_view,
         _inference_indirect, _inference_direct, _inference_value_without_grad,
         _detach_not_a_view, _detach_bumps_version, _data_not_a_view, _data_own_version,
         _detach_of_view, _view_of_detach, _unbind_indirect, _unbind_direct,
         _unbind_direct_grad_base, _split_direct, _split_single, _split_with_sizes_direct,
         _chunk_indirect, _chunk_sibling, _view_of_split_output, _split_in_nograd,
         _split_output_written_in_nograd, _split_without_grad, _split_outputs_used,
         _grad_is_own_view, _grad_is_own_detach, _grad_has_graph, _grad_is_self]


def outcome(fn, lib):
    """The case's result, a tensor's values, or the exception's type and exact message."""
    try:
        r = fn(lib)
    except Exception as e:   # noqa: BLE001 -- the exception is the result compared
        return ("raised", type(e).__name__, str(e))
    if isinstance(r, ptl.Tensor) or (torch is not None and isinstance(r, torch.Tensor)):
        return ("tensor", r.tolist())
    return ("ok", r)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_matches_torch(fn):
    """The same outcome as torch's (live, or stored without torch: tests/golden.py)."""
    assert golden.plain(outcome(fn, ptl)) == golden.answer(lambda: outcome(fn, torch))


# cases whose PyTorch outcome is an error: the test above must compare errors, not successes
RAISES = {"_nograd_view_indirect", "_nograd_view_is_leaf", "_nograd_view_used",
          "_nograd_view_direct", "_inference_direct", "_unbind_direct", "_split_single",
          "_chunk_sibling", "_view_of_split_output", "_split_output_written_in_nograd",
          "_grad_is_self", "_integer_view_grad_value"}


@pytest.mark.parametrize("fn", [f for f in CASES if f.__name__ in RAISES],
                         ids=lambda f: f.__name__.strip("_"))
def test_error_cases_raise(fn):
    assert outcome(fn, ptl)[0] == "raised"


def test_nograd_view_message():
    x = ptl.zeros(2)
    with ptl.no_grad():
        v = x[:]
    x.add_(ptl.ones(2, requires_grad=True))
    msg = ("A view was created in no_grad mode and its base or another view of its base has "
           "been modified inplace with grad mode enabled. Given that this use case is ambiguous "
           "and error-prone, it is forbidden. You can clarify your code by moving both the view "
           "and the inplace either both inside the no_grad block (if you don't want the inplace "
           "to be tracked) or both outside (if you want the inplace to be tracked).")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        v.grad_fn
    assert v.requires_grad


def test_multi_output_message():
    x = ptl.zeros(4, requires_grad=True).clone()
    a, b = x.split(2)
    msg = ("Output 1 of Split is a view and is being modified inplace. This view is the output "
           "of a function that returns multiple views. Such functions do not allow the output "
           "views to be modified inplace. You should replace the inplace operation by an "
           "out-of-place one.")
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        b.mul_(2)


# ---- gradcheck through regenerated views ----

def _through_base(w):
    x = ptl.zeros(2, 3, dtype=ptl.float64)
    v = x.t()[1:]                          # non-contiguous view made before the write
    x.add_(w)                              # w broadcasts over x's rows
    return v * v


def _through_sibling(w):
    x = ptl.zeros(2, 4, dtype=ptl.float64)
    v = x[:, ::2]
    x[:, 1:3].mul_(0).add_(w.exp())
    return v.sin()


@pytest.mark.parametrize("f, shape", [(_through_base, (3,)), (_through_sibling, (2, 2))],
                         ids=["base", "sibling"])
def test_gradcheck_regenerated_view(f, shape):
    vals = np.random.default_rng(3).standard_normal(shape)
    w = ptl.tensor(vals.tolist(), dtype=ptl.float64, requires_grad=True)
    assert gradcheck(f, (w,))
    assert gradgradcheck(f, (w,))


# ---- x.grad cycles are freed by the collector ----

def _live():
    gc.collect()
    return _C._live_counts()


CYCLES = {
    "own_view": lambda x: x[:],
    "own_view_of_view": lambda x: x.view(3, 1)[:, 0],
    "graph": lambda x: x * 2,
    "graph_saves_x": lambda x: x * x,
    "view_of_clone": lambda x: x.clone()[:],
    "view_then_graph": lambda x: x[:].mul(1),
}


@pytest.mark.parametrize("grad", CYCLES.values(), ids=CYCLES.keys())
def test_grad_cycle_is_collected(grad):
    before = _live()

    def make():
        x = ptl.zeros(3, requires_grad=True)
        x.grad = grad(x)
    make()
    assert _live() == before


def test_grad_cycle_of_base_without_grad_is_collected():
    before = _live()
    x = ptl.zeros(3)
    x.grad = x[:]
    del x
    assert _live() == before


def test_grad_cycle_kept_while_reachable():
    before = _live()
    x = ptl.arange(3.0).requires_grad_()
    x.grad = x[:]
    other = x[1:]                           # keeps x alive through its base
    del x
    assert _live() != before
    assert other._base.grad._base is other._base
    assert other._base.grad.tolist() == [0.0, 1.0, 2.0]
    del other
    assert _live() == before
    x = ptl.arange(3.0).requires_grad_()
    x.grad = x[:]
    g = x.grad                              # the grad's wrapper keeps x alive
    del x
    assert g._base.grad is g
    del g
    assert _live() == before


def test_grad_reset_drops_the_anchor():
    before = _live()
    x = ptl.zeros(3, requires_grad=True)
    x.grad = x[:]
    x.grad = ptl.ones(3)
    assert x.grad.tolist() == [1.0, 1.0, 1.0]
    del x
    assert _live() == before


def test_grad_cycle_with_hook_is_collected():
    before = _live()
    x = ptl.zeros(3, requires_grad=True)
    x.grad = x[:]
    x.register_hook(lambda g: x)
    del x
    assert _live() == before


def test_grad_is_self_refused():
    x = ptl.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("can't assign Variable as its own grad")):
        x.grad = x


def test_is_view_matches_torch():
    def kinds(m):
        x = m.ones(4, 2)
        return [x._is_view(), x[1:]._is_view(), x.t()._is_view(), x.detach()._is_view(),
                x.clone()._is_view(), x.view(8)._is_view(), x.reshape(8)._is_view(),
                x.t().reshape(8)._is_view(), x.unbind(0)[0]._is_view()]
    assert kinds(ptl) == golden.answer(lambda: kinds(torch))
