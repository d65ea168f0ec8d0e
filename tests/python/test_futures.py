"""pytorchlite.futures (torch.futures): completion once, chaining with then(), errors carried
to wait(), callbacks, collect_all and wait_all, and completion from another thread; the same
behaviour as PyTorch's Future where torch is installed."""
import threading

import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

LIBS = ["ptl", pytest.param("torch", marks=torch_ref)]


def futures(lib):
    return (ptl if lib == "ptl" else torch).futures


@pytest.mark.parametrize("lib", LIBS)
def test_set_result_then_wait_and_value(lib):
    fu = futures(lib)
    f = fu.Future()
    assert not f.done()
    chained = f.then(lambda x: x.value() * 10)
    calls = []
    f.add_done_callback(lambda x: calls.append(x.value()))
    f.set_result(4)
    assert f.done() and f.wait() == 4 and f.value() == 4
    assert chained.wait() == 40 and calls == [4]
    late = []
    f.add_done_callback(lambda x: late.append(x.value()))   # runs at once
    assert late == [4]
    assert f.then(lambda x: x.value() + 1).wait() == 5


@pytest.mark.parametrize("lib", LIBS)
def test_errors_reach_wait(lib):
    fu = futures(lib)
    f = fu.Future()
    g = f.then(lambda x: 1 / 0)
    f.set_result(0)
    with pytest.raises(RuntimeError, match="^Got the following error when running the "
                       "callback: ZeroDivisionError: division by zero"):
        g.wait()
    h = fu.Future()
    follow = h.then(lambda x: x.value())
    h.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        h.wait()
    with pytest.raises(RuntimeError, match="ValueError: boom"):   # its callback re-raised
        follow.wait()


@pytest.mark.parametrize("lib", LIBS)
def test_completing_twice_raises(lib):
    f = futures(lib).Future()
    f.set_result(1)
    with pytest.raises(RuntimeError, match="^Attempting to mark a completed Future as complete "
                       "again"):
        f.set_result(2)


def test_value_before_completion_and_bad_exception_raise():
    f = ptl.futures.Future()
    with pytest.raises(RuntimeError, match="has not completed"):
        f.value()
    with pytest.raises(TypeError, match="expects an exception"):
        f.set_exception("not an exception")


@pytest.mark.parametrize("lib", LIBS)
def test_collect_all_and_wait_all(lib):
    fu = futures(lib)
    a, b = fu.Future(), fu.Future()
    both = fu.collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    b.set_result(2)
    assert [x.value() for x in both.wait()] == [1, 2]
    assert fu.wait_all([a, b]) == [1, 2]
    c, d = fu.Future(), fu.Future()
    c.set_result(1)
    d.set_exception(KeyError("k"))
    with pytest.raises(KeyError):
        fu.wait_all([c, d])


@pytest.mark.parametrize("lib", LIBS)
def test_wait_blocks_until_another_thread_completes(lib):
    f = futures(lib).Future()
    timer = threading.Timer(0.05, lambda: f.set_result("done"))
    timer.start()
    assert f.wait() == "done"
    timer.join()


def test_future_is_generic():
    assert ptl.futures.Future[ptl.Tensor] is not None
