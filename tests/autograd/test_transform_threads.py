"""Transforms on several threads (Note [Transform state per thread] in
pytorchlite/autograd/function.py): torch.func transforms, tangent computations and custom
Functions on one thread see nothing of another's, an error on one leaves the other's state as
it was, and the forward-AD level is one for the process, as PyTorch's.  Barriers force the
threads to interleave at the points where shared state would show; every wait has a timeout,
so a broken interleaving fails instead of hanging."""
import threading

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

WAIT = 20   # seconds


def _run_threads(*fns):
    """Runs each fn on its own thread; their results in order (an exception is re-raised)."""
    results, errors = [None] * len(fns), [None] * len(fns)

    def run(i):
        try:
            results[i] = fns[i]()
        except BaseException as e:   # re-raised on the main thread below
            errors[i] = e

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(fns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(4 * WAIT)
        assert not t.is_alive()
    for e in errors:
        if e is not None:
            raise e
    return results


def _classes(lib):
    """Custom Functions written against lib: Cube (setup_context style, with jvp), OldCube
    (forward(ctx, x), usable outside transforms only), and Shift (a vmap staticmethod that
    records the randomness it is called with)."""
    Function = lib.autograd.Function

    class Cube(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])
            ctx.save_for_forward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x ** 2

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * 3 * x ** 2

    class OldCube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x ** 2

    seen = []

    class Shift(Function):
        @staticmethod
        def forward(x):
            return x + 1

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vmap(info, in_dims, x):
            seen.append(info.randomness)
            return x + 1, in_dims[0]

    return Cube, OldCube, Shift, seen


def _x(seed):
    return ptl.from_numpy(np.random.default_rng(seed).uniform(-2, 2, (3,)))


def test_a_custom_function_outside_transforms_is_unaffected_by_a_vmap_on_another_thread():
    Cube, OldCube, _, _ = _classes(ptl)
    inside, done = threading.Barrier(2, timeout=WAIT), threading.Barrier(2, timeout=WAIT)
    x = _x(0)

    def vmapped(row):
        inside.wait()
        done.wait()
        return row * 2

    def mapping():
        return ptl.func.vmap(vmapped)(ptl.ones(1, 3))

    def plain():
        inside.wait()
        try:
            return OldCube.apply(x)
        finally:
            done.wait()

    mapped, cubed = _run_threads(mapping, plain)
    assert mapped.tolist() == [[2.0] * 3]
    np.testing.assert_allclose(cubed.numpy(), x.numpy() ** 3, rtol=1e-12)


def test_a_tangent_pass_on_one_thread_leaves_a_backward_on_another_to_backward():
    """Thread b applies a custom Function while thread a's func.jvp runs its function, and
    differentiates it with create_graph while thread a is inside the first reverse pass (a
    hook on its graph): b's node must run the Function's backward, not a tangent pass's jvp
    bridge."""
    Cube, _, _, _ = _classes(ptl)
    in_func, applied, in_pass, done = (threading.Barrier(2, timeout=WAIT) for _ in range(4))
    xa, ta, xb = _x(1), _x(2), _x(3).requires_grad_()

    def hold(g):
        in_pass.wait()
        done.wait()
        return g

    def hooked(x):
        in_func.wait()
        applied.wait()
        y = Cube.apply(x)
        y.register_hook(hold)
        return y * 2

    def tangents():
        return ptl.func.jvp(hooked, (xa,), (ta,))[1]

    def backward():
        in_func.wait()
        y = Cube.apply(xb)
        applied.wait()
        in_pass.wait()
        try:
            return ptl.autograd.grad(y.sum(), xb, create_graph=True)[0]
        finally:
            done.wait()

    tangent, grad = _run_threads(tangents, backward)
    np.testing.assert_allclose(tangent.numpy(), 6 * xa.numpy() ** 2 * ta.numpy(), rtol=1e-12)
    np.testing.assert_allclose(grad.detach().numpy(), 3 * xb.detach().numpy() ** 2, rtol=1e-12)


def test_jvp_and_a_dual_level_through_custom_functions_on_two_threads_at_once():
    """Thread a computes a tangent in the forward-AD level, thread b one with func.jvp, both
    through Cube's jvp, each stopping inside its computation until the other is inside its
    own: each gets its own tangent."""
    Cube, _, _, _ = _classes(ptl)
    fwAD = ptl.autograd.forward_ad
    both_in = threading.Barrier(2, timeout=WAIT)
    xa, ta, xb, tb = _x(4), _x(5), _x(6), _x(7)

    def dual():
        with fwAD.dual_level():
            y = Cube.apply(fwAD.make_dual(xa, ta)) * 5
            both_in.wait()
            return fwAD.unpack_dual(y).tangent

    def func_jvp():
        def f(x):
            both_in.wait()
            return Cube.apply(x) * 7
        return ptl.func.jvp(f, (xb,), (tb,))[1]

    tangent_a, tangent_b = _run_threads(dual, func_jvp)
    np.testing.assert_allclose(tangent_a.numpy(), 15 * xa.numpy() ** 2 * ta.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tangent_b.numpy(), 21 * xb.numpy() ** 2 * tb.numpy(), rtol=1e-12)


def test_func_jvp_on_two_threads_at_once_gives_each_its_tangent():
    Cube, _, _, _ = _classes(ptl)
    both_in = threading.Barrier(2, timeout=WAIT)
    pairs = [(_x(8), _x(9)), (_x(10), _x(11))]

    def f(x):
        both_in.wait()
        return Cube.apply(x).sin()

    got = _run_threads(*(lambda p=p, t=t: ptl.func.jvp(f, (p,), (t,)) for p, t in pairs))
    for (out, tangent), (p, t) in zip(got, pairs):
        p, t = p.numpy(), t.numpy()
        np.testing.assert_allclose(out.numpy(), np.sin(p ** 3), rtol=1e-12)
        np.testing.assert_allclose(tangent.numpy(), np.cos(p ** 3) * 3 * p ** 2 * t, rtol=1e-12)


def test_an_error_in_one_threads_vmap_leaves_the_other_threads_vmap_as_it_was():
    """Thread a's vmap raises while thread b's runs: b's Function still sees its own
    randomness, and its transforms still count (an old-style Function is refused there)."""
    Cube, OldCube, Shift, seen = _classes(ptl)
    a_in, b_in, a_out = (threading.Barrier(2, timeout=WAIT) for _ in range(3))

    def failing(row):
        a_in.wait()
        b_in.wait()
        raise ValueError("boom")

    def thread_a():
        try:
            ptl.func.vmap(failing, randomness="different")(ptl.ones(1, 3))
        except ValueError as e:
            return str(e)
        finally:
            a_out.wait()

    def surviving(row):
        b_in.wait()
        a_out.wait()
        with pytest.raises(RuntimeError, match="it must override the setup_context"):
            OldCube.apply(row)
        return Shift.apply(row)

    def thread_b():
        a_in.wait()
        return ptl.func.vmap(surviving, randomness="same")(ptl.ones(1, 3))

    error, shifted = _run_threads(thread_a, thread_b)
    assert error == "boom"
    assert shifted.tolist() == [[2.0] * 3]
    assert seen == ["same"]


@pytest.mark.parametrize("lib", [ptl, pytest.param(torch, marks=torch_ref)], ids=["ptl", "torch"])
def test_the_forward_ad_level_is_one_for_the_process_as_in_pytorch(lib):
    """A level entered on one thread is every thread's: a second thread cannot enter another
    (PyTorch's error) and leaves the first intact, and it sees the first thread's duals."""
    fwAD = lib.autograd.forward_ad
    x = lib.from_numpy(np.array([1.0, 2.0]))
    t = lib.from_numpy(np.array([3.0, 4.0]))
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, t)

        def enter():
            with pytest.raises(RuntimeError, match="^Nested forward mode AD is not supported at "
                                                   "the moment$"):
                fwAD.enter_dual_level()
            return fwAD.unpack_dual(dual * dual).tangent

        seen_there, = _run_threads(enter)
        here = fwAD.unpack_dual(dual * 3).tangent
    assert seen_there.tolist() == [6.0, 16.0]
    assert here.tolist() == [9.0, 12.0]
    assert fwAD.unpack_dual(dual).tangent is None


def test_threads_entering_the_level_together_get_one_level():
    fwAD = ptl.autograd.forward_ad
    start, tried = threading.Barrier(4, timeout=WAIT), threading.Barrier(4, timeout=WAIT)

    def enter():
        start.wait()
        try:
            fwAD.enter_dual_level()
        except RuntimeError:
            tried.wait()
            return False
        tried.wait()
        fwAD.exit_dual_level()
        return True

    assert sorted(_run_threads(*[enter] * 4)) == [False, False, False, True]
    with fwAD.dual_level() as level:
        assert level == 0
