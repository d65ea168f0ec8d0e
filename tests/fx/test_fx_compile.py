"""torch.compile(model, backend=callable): the backend gets the model's torch.fx GraphModule and
the first call's arguments, and what it returns runs every call; a model fx cannot trace runs
as written with one warning (fullgraph=True raises); a backend that raises gives
BackendCompilerFailed with PyTorch's message."""
import warnings

import pytest

import pytorchlite as ptl
from pytorchlite import fx
from helpers import torch, torch_ref


class Recorder:
    """A backend that keeps what it was given and returns gm.forward."""

    def __init__(self):
        self.calls = []

    def __call__(self, gm, example_inputs):
        self.calls.append((gm, example_inputs))
        return gm.forward


def small_net():
    ptl.manual_seed(0)
    return ptl.nn.Sequential(ptl.nn.Linear(3, 4), ptl.nn.ReLU(), ptl.nn.Linear(4, 2))


def test_backend_gets_the_graph_once_and_its_result_runs():
    backend = Recorder()
    net = small_net()
    compiled = ptl.compile(net, backend=backend)
    assert isinstance(compiled, ptl._dynamo.eval_frame.OptimizedModule)
    assert backend.calls == []                      # nothing is traced before the first call
    x = ptl.randn(5, 3)
    assert ptl.equal(compiled(x), net(x))
    y = ptl.randn(2, 3)                             # another shape: the same graph runs
    assert ptl.equal(compiled(y), net(y))
    assert len(backend.calls) == 1
    gm, example_inputs = backend.calls[0]
    assert isinstance(gm, fx.GraphModule) and example_inputs == [x]
    assert [n.op for n in gm.graph.nodes] == ["placeholder"] + ["call_module"] * 3 + ["output"]
    assert gm.get_submodule("0") is net[0]          # the graph runs the model's own layers


def test_functions_and_their_python_code():
    backend = Recorder()

    def f(x, y):
        return ptl.nn.functional.relu(x) * y + 1

    compiled = ptl.compile(f, backend=backend)
    x, y = ptl.randn(4), ptl.randn(4)
    assert ptl.equal(compiled(x, y), f(x, y))
    gm, example_inputs = backend.calls[0]
    assert example_inputs == [x, y]
    assert gm.code == ("\n\n\ndef forward(self, x, y):\n"
                       "    relu = torch.nn.functional.relu(x, inplace = False);  x = None\n"
                       "    mul = relu * y;  relu = y = None\n"
                       "    add = mul + 1;  mul = None\n    return add\n    ")
    # the decorator form, and a bound forward traces its module
    deco = ptl.compile(backend=backend)(f)
    assert ptl.equal(deco(x, y), f(x, y))
    net = small_net()
    bound = ptl.compile(net.forward, backend=backend)
    assert ptl.equal(bound(ptl.ones(1, 3)), net(ptl.ones(1, 3)))
    assert backend.calls[-1][0].get_submodule("2") is net[2]


def test_backend_returning_another_callable():
    seen = []

    def doubling(gm, example_inputs):
        def run(*args):
            seen.append(len(args))
            return gm(*args) * 2
        return run

    net = small_net()
    compiled = ptl.compile(net, backend=doubling)
    x = ptl.randn(3, 3)
    assert ptl.allclose(compiled(x), net(x) * 2)
    compiled(x)
    assert seen == [1, 1]


def test_backend_that_raises():
    def bad(gm, example_inputs):
        raise ValueError("nope")

    compiled = ptl.compile(lambda x: x.sin() + 1, backend=bad)
    with pytest.raises(ptl._dynamo.exc.BackendCompilerFailed) as info:
        compiled(ptl.randn(3))
    assert str(info.value) == "backend='bad' raised:\nValueError: nope"
    assert isinstance(info.value, RuntimeError) and isinstance(info.value.__cause__, ValueError)
    assert info.value.backend_name == "bad"
    with pytest.raises(ptl._dynamo.exc.BackendCompilerFailed, match="did not return a callable"):
        ptl.compile(lambda x: x, backend=lambda gm, example_inputs: 3)(ptl.ones(1))


@torch_ref
def test_backend_that_raises_as_torch():
    def bad(gm, example_inputs):
        raise ValueError("nope")

    with pytest.raises(Exception) as theirs:
        torch.compile(lambda x: x.sin() + 1, backend=bad)(torch.randn(3))
    with pytest.raises(Exception) as ours:
        ptl.compile(lambda x: x.sin() + 1, backend=bad)(ptl.randn(3))
    assert type(ours.value).__name__ == type(theirs.value).__name__ == "BackendCompilerFailed"
    assert str(theirs.value).startswith(str(ours.value))


def test_untraceable_model_runs_as_written_with_one_warning():
    backend = Recorder()
    calls = []

    def branchy(x):
        calls.append(1)
        return x if x.sum() > 0 else -x

    compiled = ptl.compile(branchy, backend=backend)
    with pytest.warns(UserWarning, match="torch.fx cannot trace branchy .TraceError: "
                                         "symbolically traced variables"):
        assert ptl.equal(compiled(ptl.ones(2)), ptl.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ptl.equal(compiled(-ptl.ones(2)), ptl.ones(2))
    assert backend.calls == [] and calls == [1, 1, 1]   # the failed trace ran it once too
    strict = ptl.compile(branchy, backend=backend, fullgraph=True)
    with pytest.raises(fx.proxy.TraceError, match="control flow"):
        strict(ptl.ones(2))


def test_named_backends_keep_running_the_code_as_written():
    net = small_net()
    for name in ("inductor", "eager", "aot_eager"):
        compiled = ptl.compile(net, backend=name)
        assert compiled._runs is net
        x = ptl.randn(2, 3)
        assert ptl.equal(compiled(x), net(x))
    with pytest.raises(ptl._dynamo.exc.InvalidBackend):
        ptl.compile(net, backend=3)
