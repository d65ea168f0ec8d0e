"""Variable._execution_engine: queue_callback (Note [Final callbacks] in
src/python/autograd_object.c) and is_checkpoint_valid, against PyTorch's behaviour."""
import threading

import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref
from pytorchlite.autograd import Variable

ENGINE = Variable._execution_engine


def run_scenario(lib):
    """Records what hooks and final callbacks see, in order, in library `lib`."""
    engine = lib.autograd.Variable._execution_engine
    x = lib.ones(3, requires_grad=True)
    order = []

    def second():
        order.append("second")

    def first():
        order.append(("first", x.grad.tolist()))
        engine.queue_callback(second)

    def hook(g):
        order.append(("hook", x.grad))
        engine.queue_callback(first)
        return g

    y = x * 2
    y.register_hook(hook)
    (y * y).sum().backward()
    return order


def test_callbacks_run_after_the_pass_in_queue_order():
    order = run_scenario(ptl)
    # the hook runs before x's AccumulateGrad; the callbacks after it, the one a callback
    # queued last
    assert order == [("hook", None), ("first", [8.0, 8.0, 8.0]), "second"]


@torch_ref
def test_callbacks_match_torch():
    assert run_scenario(ptl) == run_scenario(torch)


def test_outside_backward_is_an_error():
    with pytest.raises(RuntimeError, match=r"^Final callbacks can only be installed during "
                                           r"backward pass\.$"):
        ENGINE.queue_callback(lambda: None)


def test_after_a_pass_is_an_error_again():
    x = ptl.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: ENGINE.queue_callback(lambda: None))
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Final callbacks"):
        ENGINE.queue_callback(lambda: None)


def test_not_callable_is_a_type_error_when_queued():
    x = ptl.ones(2, requires_grad=True)
    seen = []

    def hook(g):
        with pytest.raises(TypeError, match="expects a callable.*got int"):
            ENGINE.queue_callback(1)
        seen.append(True)

    y = x * 3
    y.register_hook(hook)
    y.sum().backward()
    assert seen == [True]
    assert x.grad.tolist() == [3.0, 3.0]


def test_a_raising_callback_ends_the_pass_and_skips_the_rest():
    x = ptl.ones(2, requires_grad=True)
    ran = []

    def boom():
        raise ValueError("boom")

    def hook(g):
        ENGINE.queue_callback(boom)
        ENGINE.queue_callback(lambda: ran.append(True))

    y = x * 3
    y.register_hook(hook)
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    assert ran == []
    with pytest.raises(RuntimeError, match="Final callbacks"):   # the pass is over
        ENGINE.queue_callback(lambda: None)


def test_callbacks_of_a_failing_pass_do_not_run():
    class Fail(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            raise KeyError("node failed")

    x = ptl.ones(2, requires_grad=True)
    ran = []
    y = Fail.apply(x) * 2
    y.register_hook(lambda g: ENGINE.queue_callback(lambda: ran.append(True)))
    with pytest.raises(KeyError, match="node failed"):
        y.sum().backward()
    assert ran == []


def test_a_nested_pass_runs_its_own_callbacks_first():
    x = ptl.ones(2, requires_grad=True)
    order = []

    def outer_hook(g):
        with ptl.enable_grad():
            a = ptl.ones(1, requires_grad=True)
            b = a * 2
            b.register_hook(lambda gg: ENGINE.queue_callback(lambda: order.append("inner")))
            b.sum().backward()
        order.append("after nested")
        ENGINE.queue_callback(lambda: order.append("outer"))

    y = x * 4
    y.register_hook(outer_hook)
    y.sum().backward()
    assert order == ["inner", "after nested", "outer"]


def test_autograd_grad_runs_callbacks_before_returning():
    x = ptl.ones(3, requires_grad=True)
    seen = []
    y = x * 4
    y.register_hook(lambda g: ENGINE.queue_callback(lambda: seen.append(x.grad is None)))
    (gx,) = ptl.autograd.grad(y.sum(), x)
    assert gx.tolist() == [4.0, 4.0, 4.0]
    assert seen == [True]


def test_each_thread_has_its_own_pass():
    x = ptl.ones(2, requires_grad=True)
    errors = []

    def other_thread():
        try:
            ENGINE.queue_callback(lambda: None)
        except RuntimeError as e:
            errors.append(str(e))

    def hook(g):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert errors == ["Final callbacks can only be installed during backward pass."]


def test_current_graph_task_id_numbers_the_passes():
    assert ptl._C._current_graph_task_id() == -1
    x = ptl.ones(2, requires_grad=True)
    seen = []

    def hook(g):
        seen.append(ptl._C._current_graph_task_id())
        with ptl.enable_grad():
            a = ptl.ones(1, requires_grad=True)
            b = a * 2
            b.register_hook(lambda gg: seen.append(ptl._C._current_graph_task_id()))
            b.sum().backward()
        seen.append(ptl._C._current_graph_task_id())   # the outer pass again

    y = x * 2
    y.register_hook(hook)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    outer, inner, outer_again, second = seen[0], seen[1], seen[2], seen[3]
    assert min(seen) >= 0 and outer == outer_again
    assert len({outer, inner, second}) == 3
    assert ptl._C._current_graph_task_id() == -1


@torch_ref
def test_current_graph_task_id_outside_a_pass_matches_torch():
    assert ptl._C._current_graph_task_id() == torch._C._current_graph_task_id() == -1


def checkpoint_validity(lib):
    engine = lib.autograd.Variable._execution_engine
    x = lib.ones(2, requires_grad=True)
    seen = [engine.is_checkpoint_valid()]
    y = x * 2
    y.register_hook(lambda g: seen.append(engine.is_checkpoint_valid()))
    y.sum().backward(retain_graph=True)
    lib.autograd.grad(y.sum(), x, retain_graph=True)
    y.sum().backward(inputs=[x])
    seen.append(engine.is_checkpoint_valid())
    return seen


def test_is_checkpoint_valid_is_false_where_inputs_are_given():
    assert checkpoint_validity(ptl) == [True, True, False, False, True]


@torch_ref
def test_is_checkpoint_valid_matches_torch():
    assert checkpoint_validity(ptl) == checkpoint_validity(torch)
