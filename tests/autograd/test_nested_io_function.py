"""autograd.function.NestedIOFunction, the legacy Function whose instances are called with
tensors nested in tuples and lists: forward_extended / backward_extended see the nesting,
save_for_backward keeps it, gradients reach every nested input (gradcheck in float64), and
the errors are PyTorch's.  Calling an instance fails inside PyTorch 2.13 itself (its base
class lost _do_forward); that failure is checked too, since the docs say so."""
import numpy as np
import pytest

import golden
import pytorchlite as ptl
from pytorchlite.autograd.function import NestedIOFunction
from helpers import torch


class ScaleAndShift(NestedIOFunction):
    """(a, (b, c)) -> (a * b, [b + c]); saves (a, (b,)) nested."""

    def forward_extended(self, a, bc):
        b, c = bc
        self.save_for_backward(a, (b,))
        return a * b, [b + c]

    def backward_extended(self, g_ab, g_list):
        a, (b,) = self.saved_tensors
        g_sum, = g_list
        return g_ab * b, (g_ab * a + g_sum, g_sum)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [ptl.tensor(rng.standard_normal(4), requires_grad=True) for _ in range(3)]


def test_nested_call_keeps_the_nesting():
    a, b, c = _inputs()
    out = ScaleAndShift()(a, (b, c))
    assert isinstance(out, tuple) and isinstance(out[1], list) and len(out[1]) == 1
    np.testing.assert_allclose(out[0].detach().numpy(), (a * b).detach().numpy())
    np.testing.assert_allclose(out[1][0].detach().numpy(), (b + c).detach().numpy())
    assert out[0].grad_fn is out[1][0].grad_fn is not None
    (out[0].sum() * 2 + out[1][0].sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * b.detach().numpy())
    np.testing.assert_allclose(b.grad.numpy(), 2 * a.detach().numpy() + 1)
    np.testing.assert_allclose(c.grad.numpy(), np.ones(4))


def test_nested_gradcheck():
    def f(a, b, c):
        out = ScaleAndShift()(a, (b, c))
        return out[0], out[1][0]
    assert ptl.autograd.gradcheck(f, tuple(_inputs(1)))


def test_nested_none_gradient_and_non_differentiable():
    class Pick(NestedIOFunction):
        def forward_extended(self, pair):
            x, y = pair
            mask = x > 0
            self.mark_non_differentiable(mask)
            return x * 2, mask

        def backward_extended(self, g, g_mask):
            return (g * 2, None)

    x, y, _ = _inputs(2)
    out, mask = Pick()((x, y))
    assert not mask.requires_grad and mask.dtype == ptl.bool
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 2.0))
    assert y.grad is None


def test_nested_errors_and_defaults():
    f = ScaleAndShift()
    f.save_for_backward(ptl.ones(1), (None, ptl.zeros(2)))
    assert len(f.to_save) == 2 and f._to_save_nested[1][0] is None

    def bad_save(lib):
        return lib.autograd.function.NestedIOFunction().save_for_backward(3)
    golden.assert_raises(lambda: bad_save(ptl), lambda: bad_save(torch))

    def not_implemented(lib, which):
        fn = lib.autograd.function.NestedIOFunction()
        return fn.forward_extended(1) if which == "forward" else fn.backward_extended(1)
    for which in ("forward", "backward"):
        golden.assert_raises(lambda: not_implemented(ptl, which),
                             lambda: not_implemented(torch, which), sub=which)
    with pytest.raises(ValueError, match="^Auto nesting doesn't know how to process an input "
                       "object of type str. Accepted types: Tensors, or lists/tuples of them$"):
        ScaleAndShift()("a", ("b", "c"))
    assert ptl.autograd.NestedIOFunction is NestedIOFunction
    assert issubclass(NestedIOFunction, ptl.autograd.Function)


def test_pytorchs_instance_call_fails():
    def call():
        class F(torch.autograd.function.NestedIOFunction):
            def forward_extended(self, a):
                return a * 2
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return F()(torch.ones(2, requires_grad=True))
    raised = golden.golden(call)
    assert isinstance(raised, golden.Raised) and raised.type_name == "AttributeError"
    assert "_do_forward" in raised.message
