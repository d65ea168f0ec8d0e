"""TorchDispatchMode (pytorchlite.utils._python_dispatch) and the Python dispatch key below it
(Note [Python dispatch key]): what a mode sees, nesting, rewriting results, errors, threads,
and PyTorch's op sequence for the same program (torch_ref)."""
import gc
import importlib
import threading
from collections import Counter

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.utils import _python_dispatch as pd
from pytorchlite.utils._python_dispatch import TorchDispatchMode
from helpers import torch, torch_ref


def logging_mode(lib):
    """A LoggingMode class for lib (pytorchlite or torch) that records str(func)."""
    base = importlib.import_module(lib.__name__ + ".utils._python_dispatch").TorchDispatchMode

    class LoggingMode(base):
        def __init__(self):
            super().__init__()
            self.log = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.log.append(str(func))
            return func(*args, **(kwargs or {}))
    return LoggingMode


LoggingMode = logging_mode(ptl)


def python_key_included():
    return _C._dispatch_tls_local_include_set().has("Python")


def test_key_is_included_only_while_a_mode_is_on_the_stack():
    assert not python_key_included() and pd._len_torch_dispatch_stack() == 0
    with LoggingMode() as m:
        assert python_key_included() and pd._get_current_dispatch_mode() is m
        assert pd._len_torch_dispatch_stack() == 1
    assert not python_key_included() and pd._get_current_dispatch_mode() is None


def test_mode_sees_overload_objects_args_and_non_default_kwargs():
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func, types, args, kwargs))
            return func(*args, **kwargs)

    x, y = ptl.ones(3), ptl.arange(3.0)
    with Record():
        z = ptl.add(x, y)
        w = ptl.add(x, y, alpha=2)
    func, types, args, kwargs = seen[0]
    assert func is ptl.ops.aten.add.Tensor and str(func) == "aten.add.Tensor"
    assert func.overloadpacket is ptl.ops.aten.add and func.name() == "aten::add.Tensor"
    assert str(func._schema) == ("aten::add.Tensor(Tensor self, Tensor other, *, "
                                 "Scalar alpha=1) -> Tensor")
    assert types == () and args[0] is x and args[1] is y and kwargs == {}
    assert seen[1][3] == {"alpha": 2}
    np.testing.assert_array_equal(z.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(w.numpy(), [1, 3, 5])


def test_mode_sees_decomposed_ops_and_the_backward():
    x = ptl.randn(4, 3, requires_grad=True)
    w = ptl.randn(2, 3, requires_grad=True)
    with LoggingMode() as m:
        ptl.nn.functional.linear(x, w).sum().backward()
    assert "aten.mm.default" in m.log          # linear decomposed, and the backward's mm
    assert not any(s.startswith("aten.linear") for s in m.log)
    assert x.grad.shape == (4, 3) and w.grad.shape == (2, 3)


def test_nested_modes_innermost_first_then_the_outer_one():
    order = []

    class Tag(TorchDispatchMode):
        def __init__(self, tag):
            super().__init__()
            self.tag = tag

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            order.append((self.tag, str(func), pd._len_torch_dispatch_stack()))
            return func(*args, **kwargs)

    x = ptl.ones(2)
    with Tag("outer"), Tag("inner"):
        x.neg()
    assert order == [("inner", "aten.neg.default", 1), ("outer", "aten.neg.default", 0)]
    assert pd._len_torch_dispatch_stack() == 0


def test_mode_can_rewrite_results():
    class ZeroAdd(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **kwargs)
            return ptl.zeros_like(out) if func.overloadpacket is ptl.ops.aten.add else out

    x = ptl.ones(3)
    with ZeroAdd():
        z = x + x
        m = x * 3
    np.testing.assert_array_equal(z.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(m.numpy(), [3, 3, 3])


def test_wrong_result_type_names_the_operator():
    class Bad(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return 3

    x = ptl.ones(2)
    with pytest.raises(RuntimeError, match=r"aten::neg: __torch_dispatch__ returned 3 where "
                                           r"its schema expects Tensor \(return 0 of 1\)"):
        with Bad():
            x.neg()
    assert not python_key_included()


def test_exception_in_handler_propagates_and_restores_the_stack():
    class Boom(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise KeyError(str(func))

    m, y = Boom(), ptl.ones(2)
    with pytest.raises(KeyError, match="aten.neg.default"):
        with m:
            assert pd._get_current_dispatch_mode() is m
            y.neg()
    assert pd._len_torch_dispatch_stack() == 0 and not python_key_included()
    x = ptl.ones(2, requires_grad=True)
    with pytest.raises(KeyError):
        with Boom():
            (x * 2).sum()
    assert x.grad is None and (x * 2).sum().item() == 4


def live_tensors():
    gc.collect()
    return sum(issubclass(type(o), _C.TensorBase) for o in gc.get_objects())


def test_no_leak_through_handler_or_its_errors():
    class Boom(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **kwargs)
            if func.overloadpacket is ptl.ops.aten.mul:
                raise ValueError("no")
            return out

    x = ptl.randn(5, requires_grad=True)

    def step():
        with LoggingMode():
            (x + 1).exp().sum().backward()
        try:
            with Boom():
                (x + 1) * 2
        except ValueError:
            pass

    step()
    before = live_tensors()
    for _ in range(30):
        step()
    assert live_tensors() == before


def test_modes_are_per_thread():
    seen_other = []
    started, stop = threading.Event(), threading.Event()

    def other():
        seen_other.append(python_key_included())
        started.set()
        stop.wait(10)
        for _ in range(20):
            ptl.ones(3).exp()

    with LoggingMode() as m:
        t = threading.Thread(target=other)
        t.start()
        started.wait(10)
        stop.set()
        t.join()
        ptl.ones(2).neg()
    assert seen_other == [False]
    assert m.log == ["aten.ones.default", "aten.neg.default"]


def test_no_mode_path_unchanged():
    x = ptl.arange(4.0, requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 2, 4, 6])
    assert not python_key_included()


def mlp_ops(lib):
    """The ops a mode logs for a forward and backward of a small MLP under lib."""
    lib.manual_seed(0)
    net = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
    x = lib.randn(5, 4)
    target = lib.randn(5, 2)
    with logging_mode(lib)() as m:
        loss = lib.nn.functional.mse_loss(net(x), target)
        loss.backward()
    return m.log


@torch_ref
def test_mlp_forward_backward_sequence_matches_torch():
    ours, theirs = mlp_ops(ptl), mlp_ops(torch)
    # the kernels that carry the model's arithmetic reach the mode in PyTorch's order;
    # view and bookkeeping ops (t, view, detach, expand ...) differ between the libraries
    kept = ("aten.addmm", "aten.mm", "aten.relu", "aten.threshold_backward", "aten.mse_loss")

    def main_ops(log):
        return [s for s in log if s.startswith(kept)]

    assert main_ops(ours) == main_ops(theirs)
    # and every other op but views, detaches and the ones_like that seeds torch's backward
    # comes through as often
    skipped = ("aten.t.", "aten.transpose.", "aten.view.", "aten.reshape.", "aten.detach.",
               "aten.ones_like.")
    assert Counter(s for s in ours if not s.startswith(skipped)) == \
        Counter(s for s in theirs if not s.startswith(skipped))
    assert main_ops(ours)[:3] == ["aten.addmm.default", "aten.relu.default",
                                  "aten.addmm.default"]


def test_stack_helpers():
    a, b = LoggingMode(), LoggingMode()
    pd._push_mode(a)
    pd._push_mode(b)
    assert pd._get_current_dispatch_mode_stack() == [a, b] and pd.is_in_torch_dispatch_mode()
    with pd._disable_current_modes() as popped:
        assert popped == [b, a] and not python_key_included()
        ptl.ones(1).neg()
    with pd._pop_mode_temporarily() as top:
        assert top is b and pd._get_current_dispatch_mode() is a
    assert pd._pop_mode() is b and pd._pop_mode() is a
    assert not pd.is_in_torch_dispatch_mode() and not python_key_included()
    assert a.log == b.log == []
    with pytest.raises(RuntimeError, match="^trying to pop from empty mode stack$"):
        pd._pop_mode()


@torch_ref
def test_empty_pop_like_torch():
    from torch.utils._python_dispatch import _pop_mode
    with pytest.raises(RuntimeError, match="^trying to pop from empty mode stack$"):
        _pop_mode()
