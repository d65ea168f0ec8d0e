"""What eager code says to TorchScript (pytorchlite/jit/_annotations.py): is_scripting and
is_tracing, @ignore / @unused / @export, annotate, Attribute, Final, interface, fork / wait."""
import threading
from typing import List

import pytest

import pytorchlite as torch
from pytorchlite.jit.frontend import NotSupportedError


def _python_only_path(x):
    if torch.jit.is_scripting():
        y = x * 2
    else:
        y = x * 3
    if not torch.jit.is_scripting():
        y = y + 100
    return y


def test_is_scripting_is_false_in_python_and_a_constant_true_when_compiled():
    x = torch.ones(2)
    assert torch.jit.is_scripting() is False
    assert _python_only_path(x).tolist() == [103.0, 103.0]
    s = torch.jit.script(_python_only_path)
    assert s(x).tolist() == [2.0, 2.0]
    kinds = [n.kind for n in s.graph.nodes]
    assert "prim::If" not in kinds and "aten::add" not in kinds


def test_is_tracing_is_true_only_while_this_thread_traces():
    seen = []

    def f(x):
        seen.append(torch.jit.is_tracing())
        t = threading.Thread(target=lambda: seen.append(torch.jit.is_tracing()))
        t.start()
        t.join()
        return x * 2

    assert torch.jit.is_tracing() is False
    torch.jit.trace(f, (torch.ones(2),), check_trace=False)
    assert seen == [True, False]
    assert torch.jit.is_tracing() is False


@torch.jit.unused
def _unused(x):
    return x.numpy()


@torch.jit.ignore
def _ignored(x):
    return x.numpy()


def test_a_scripted_call_of_an_unused_function_raises_when_it_runs():
    def g(x, flag: bool):
        if flag:
            return _unused(x)
        return x + 1

    s = torch.jit.script(g)
    assert s(torch.ones(2), False).tolist() == [2.0, 2.0]
    with pytest.raises(torch.jit.Error, match="This Python function is annotated to be "
                                              "ignored and cannot be run"):
        s(torch.ones(2), True)


def test_scripting_a_call_of_an_ignored_function_is_refused_with_the_reason():
    def h(x):
        return _ignored(x)

    with pytest.raises(NotSupportedError, match="_ignored is marked @torch.jit.ignore"):
        torch.jit.script(h)
    assert h(torch.ones(1)).tolist() == [1.0]   # Python still runs it


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    @torch.jit.unused
    def dump(self, x):
        return x.numpy()

    @torch.jit.ignore
    def debug(self):
        return "debug"

    @torch.jit.export
    def scaled(self, x):
        return x * 2

    def forward(self, x, flag: bool = False):
        if flag:
            self.dump(x)
        return self.lin(x)


def test_module_methods_marked_for_python():
    net = _Net()
    s = torch.jit.script(net)
    x = torch.ones(1, 2)
    assert torch.equal(s(x), net(x))
    with pytest.raises(torch.jit.Error, match="annotated to be ignored"):
        s(x, True)
    assert net.debug() == "debug" and net.scaled(x).tolist() == [[2.0, 2.0]]


def test_decorator_forms_and_their_errors():
    def f():
        return 1

    assert torch.jit.ignore(f) is f and torch.jit.unused(f) is f and torch.jit.export(f) is f
    assert torch.jit.ignore(drop=True)(lambda: 2)._torchscript_modifier == "unused"
    assert torch.jit.ignore()(lambda: 2)._torchscript_modifier == "ignore"
    with pytest.raises(TypeError, match="ignore\\(\\) got an unexpected keyword argument "
                                        "'bogus'"):
        torch.jit.ignore(bogus=1)


def test_annotate_types_an_empty_list_when_compiled_and_returns_the_value_in_python():
    def f(n: int) -> List[int]:
        out = torch.jit.annotate(List[int], [])
        for i in range(n):
            out.append(i)
        return out

    assert f(3) == [0, 1, 2]
    s = torch.jit.script(f)
    assert s(3) == [0, 1, 2]
    assert s.graph.outputs[0].type == "int[]"


def test_pass_through_markers():
    assert torch.jit.Attribute(3, int) == 3
    assert torch.jit.annotate(int, 5) == 5

    class I:
        pass

    assert torch.jit.interface(I) is I
    x: torch.jit.Final[int] = 1
    assert x == 1
    fut = torch.jit.fork(lambda a, b=1: a + b, torch.ones(2), b=2)
    assert torch.jit.wait(fut).tolist() == [3.0, 3.0]
