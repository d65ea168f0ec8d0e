"""gradcheck's and gradgradcheck's options (Note [Gradcheck options] in
pytorchlite/autograd/gradcheck.py): each check passes on correct derivatives and fails on a
function built to break it, with PyTorch's message."""
import itertools

import pytest

import pytorchlite as torch
from pytorchlite.autograd import GradcheckError, gradcheck, gradgradcheck
from helpers import torch as real_torch, torch_ref


def _x(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).requires_grad_()


def _wrong_backward(lib):
    class Doubled(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    return Doubled.apply


def _nondeterministic_backward(lib):
    calls = itertools.count()

    class Noisy(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + (1e-9 if next(calls) % 2 else 0.0)

    return Noisy.apply


def _undefined_unaware_backward(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return lib.ones_like(ctx.saved_tensors[0]) if g is None else g

    return Identity.apply


@pytest.mark.parametrize("options", [
    {}, {"fast_mode": True}, {"check_forward_ad": True}, {"check_batched_grad": True},
    {"check_forward_ad": True, "check_batched_forward_grad": True},
    {"check_grad_dtypes": True, "nondet_tol": 1e-12},
    {"check_forward_ad": True, "check_backward_ad": False, "fast_mode": True},
])
def test_correct_derivatives_pass_every_check(options):
    a, b = _x(3, 2), _x(2, 4, seed=1)
    assert gradcheck(torch.mm, (a, b), **options)
    z = _x(4, dtype=torch.complex128)
    assert gradcheck(lambda t: (t * t.conj()).abs() + t.real, (z,), **options)
    assert gradcheck(lambda t: t.max(0), (a,), **options)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_wrong_backward_fails(fast_mode):
    f = _wrong_backward(torch)
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to "
                                             "input 0,\n"):
        gradcheck(f, (_x(3),), fast_mode=fast_mode)
    assert gradcheck(f, (_x(3),), fast_mode=fast_mode, raise_exception=False) is False


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_wrong_forward_derivative_fails_the_forward_check(fast_mode):
    def f(t):
        return t.detach() * 2 + t   # the derivative is 3; forward AD sees 1

    with pytest.raises(GradcheckError, match="^Jacobian computed with forward mode mismatch for "
                                             "output 0 with respect to input 0,\n"):
        gradcheck(f, (_x(3),), check_forward_ad=True, check_backward_ad=False,
                  fast_mode=fast_mode)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_backward_that_differs_run_to_run_fails_unless_nondet_tol_allows_it(fast_mode):
    with pytest.raises(GradcheckError, match="^Backward is not reentrant"):
        gradcheck(_nondeterministic_backward(torch), (_x(3),), fast_mode=fast_mode)
    assert gradcheck(_nondeterministic_backward(torch), (_x(3),), fast_mode=fast_mode,
                     nondet_tol=1e-7)


def test_a_backward_that_mishandles_undefined_output_grads_fails():
    f = _undefined_unaware_backward(torch)
    with pytest.raises(GradcheckError, match="^Expected all input grads to be undefined or zero "
                                             "when all output grads are undefined or zero"):
        gradcheck(f, (_x(3),))
    assert gradcheck(f, (_x(3),), check_undefined_grad=False)


def test_option_combinations_pytorch_refuses():
    a = _x(3)
    with pytest.raises(AssertionError, match="at least one of check_forward_ad or "
                                             "check_backward_ad"):
        gradcheck(torch.sin, (a,), check_backward_ad=False)
    with pytest.raises(AssertionError, match="check_batched_grad=True requires "
                                             "check_backward_ad"):
        gradcheck(torch.sin, (a,), check_backward_ad=False, check_forward_ad=True,
                  check_batched_grad=True)
    with pytest.raises(AssertionError, match="check_batched_forward_grad=True requires "
                                             "check_forward_ad"):
        gradcheck(torch.sin, (a,), check_batched_forward_grad=True)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(torch.sin, (a.detach(),))


def test_sparse_inputs_are_refused():
    s = torch.eye(3, dtype=torch.float64).to_sparse().requires_grad_()
    with pytest.raises(NotImplementedError, match="sparse inputs"):
        gradcheck(lambda t: t.to_dense(), (s,))


@pytest.mark.parametrize("options", [
    {}, {"gen_non_contig_grad_outputs": True}, {"check_fwd_over_rev": True},
    {"fast_mode": True}, {"check_batched_grad": True},
])
def test_gradgradcheck_options(options):
    a, b = _x(3, 2), _x(2, 4, seed=1)
    assert gradgradcheck(lambda p, q: (p @ q).sin(), (a, b), **options)


def test_gradgradcheck_finds_a_wrong_double_backward():
    f = _wrong_backward(torch)   # its backward is g * 3: the gradient of g is 3, not 2
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(lambda t: f(t) * t, (_x(3),))


@torch_ref
@pytest.mark.parametrize("make, options", [
    (_wrong_backward, {}), (_wrong_backward, {"fast_mode": True}),
    (_nondeterministic_backward, {}), (_undefined_unaware_backward, {}),
])
def test_pass_or_fail_as_torch(make, options):
    ours = gradcheck(make(torch), (_x(3),), raise_exception=False, **options)
    t = real_torch.randn(3, dtype=real_torch.float64, requires_grad=True)
    theirs = real_torch.autograd.gradcheck(make(real_torch), (t,), raise_exception=False,
                                           **options)
    assert ours == theirs


def _calls_when_no_gradient_arrives(lib):
    """What a custom Function's backward receives when the only gradient reaching it is
    undefined (the engine runs it anyway, as PyTorch's does)."""
    seen = []

    class Probe(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(g)
            return None if g is None else g * 2

    class Cut(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return None

    x = lib.ones(2, requires_grad=True)
    (grad,) = lib.autograd.grad(Cut.apply(Probe.apply(x)), [x], lib.ones(2), allow_unused=True)
    return seen, grad


def test_a_custom_functions_backward_runs_when_no_gradient_reaches_it():
    seen, grad = _calls_when_no_gradient_arrives(torch)
    assert seen == [None] and grad is None


@torch_ref
def test_a_custom_functions_backward_runs_when_no_gradient_reaches_it_as_in_torch():
    assert _calls_when_no_gradient_arrives(real_torch) == ([None], None)
