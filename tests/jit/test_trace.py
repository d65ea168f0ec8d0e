"""jit.trace: the recorded graph, its TorchScript text, TracerWarning, check_trace, guards and
autograd through traced callables."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import jit
from helpers import torch, torch_ref

MLP_GRAPH = """\
graph(%self.1 : __torch__.MLP,
      %x : Float(4, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %fc1 : __torch__.pytorchlite.nn.modules.linear.Linear = prim::GetAttr[name="fc1"](%self.1)
  %weight : Tensor = prim::GetAttr[name="weight"](%fc1)
  %2 : Float(3, 5, strides=[1, 3], requires_grad=1, device=cpu) = aten::t(%weight)
  %bias : Tensor = prim::GetAttr[name="bias"](%fc1)
  %3 : int = prim::Constant[value=1]()
  %4 : int = prim::Constant[value=1]()
  %5 : Float(4, 5, strides=[5, 1], requires_grad=1, device=cpu) = aten::addmm(%bias, %x, %2, %3, %4)
  %6 : Float(4, 5, strides=[5, 1], requires_grad=1, device=cpu) = aten::relu(%5)
  %fc2 : __torch__.pytorchlite.nn.modules.linear.Linear = prim::GetAttr[name="fc2"](%self.1)
  %weight.1 : Tensor = prim::GetAttr[name="weight"](%fc2)
  %7 : Float(5, 2, strides=[1, 5], requires_grad=1, device=cpu) = aten::t(%weight.1)
  %bias.1 : Tensor = prim::GetAttr[name="bias"](%fc2)
  %8 : int = prim::Constant[value=1]()
  %9 : int = prim::Constant[value=1]()
  %10 : Float(4, 2, strides=[2, 1], requires_grad=1, device=cpu) = aten::addmm(%bias.1, %6, %7, %8, %9)
  return (%10)
"""

PAIR_GRAPH = """\
graph(%x : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %y : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)):
  %2 : Long(requires_grad=0, device=cpu) = prim::Constant[value={2}]()
  %3 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::mul(%x, %2)
  %4 : int = prim::Constant[value=1]()
  %5 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::add(%3, %y, %4)
  %6 : Float(3, 2, strides=[1, 3], requires_grad=0, device=cpu) = aten::t(%x)
  %7 : (Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu), Float(3, 2, strides=[1, 3], requires_grad=0, device=cpu)) = prim::TupleConstruct(%5, %6)
  return (%7)
"""

PAIR_CODE = """\
def pair(x: Tensor,
    y: Tensor) -> Tuple[Tensor, Tensor]:
  return (torch.add(torch.mul(x, CONSTANTS.c0), y, 1), torch.t(x))
"""

WARNING = ("Converting a tensor to a Python {} might cause the trace to be incorrect. We can't "
           "record the data flow of Python values, so this value will be treated as a "
           "constant in the future. This means that the trace might not generalize to other "
           "inputs!")


def make_mlp(lib):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(3, 5)
            self.fc2 = lib.nn.Linear(5, 2)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))
    MLP.__module__ = "__main__"
    MLP.__qualname__ = "MLP"
    return MLP()


def pair(x, y):
    return x * 2 + y, x.t()


def test_module_graph_prints_like_torchscript():
    m = jit.trace(make_mlp(ptl), ptl.randn(4, 3))
    assert str(m.graph) == MLP_GRAPH
    assert str(m.inlined_graph) == MLP_GRAPH
    assert m.code.startswith("def forward(self,\n    x: Tensor) -> Tensor:\n  return torch.addmm(")


def test_function_graph_and_code():
    f = jit.trace(pair, (ptl.randn(2, 3), ptl.randn(2, 3)))
    assert isinstance(f, jit.ScriptFunction)
    assert str(f.graph) == PAIR_GRAPH
    assert f.code == PAIR_CODE


def _strip_source(text):
    text = re.sub(r", scope: \S+", "", text)
    return "\n".join(re.sub(r"\s*# .*$", "", line) for line in text.splitlines()) + "\n"


@torch_ref
def test_graph_text_matches_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.jit.trace(pair, (torch.randn(2, 3), torch.randn(2, 3)))
        mref = torch.jit.trace(make_mlp(torch), torch.randn(4, 3))
    assert _strip_source(str(ref.graph)) == PAIR_GRAPH
    ours = str(jit.trace(make_mlp(ptl), ptl.randn(4, 3)).graph).splitlines()
    theirs = str(mref.inlined_graph).splitlines()
    assert ours[:2] == theirs[:2]
    # the output's type; value numbers differ (torch records aten::linear, this aten::addmm)
    assert ours[-2].split(" = ")[0].split(" : ")[1] == theirs[-2].split(" = ")[0].split(" : ")[1]


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (2, 0, 4), (3, 1, 2)])
def test_traced_function_matches_numpy(shape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape[-1:] if shape else ())

    def fn(x, y):
        return (x.exp() * y - x).tanh() + x.abs().sqrt()

    f = jit.trace(fn, (ptl.tensor(a), ptl.tensor(b)))
    expected = np.tanh(np.exp(a) * b - a) + np.sqrt(np.abs(a))
    np.testing.assert_allclose(f(ptl.tensor(a), ptl.tensor(b)).numpy(), expected, rtol=1e-12)


def test_non_contiguous_inputs():
    base = ptl.randn(4, 6, dtype=ptl.float64)
    x = base.t()[::2]
    f = jit.trace(lambda t: t * t + 1, (x,))
    assert "strides=[2, 6]" in str(f.graph)
    np.testing.assert_allclose(f(x).numpy(), x.numpy() ** 2 + 1)


def test_only_top_level_calls_are_recorded():
    # softmax.int is composite: its pieces run with Tracer excluded, as PyTorch's tracer
    f = jit.trace(lambda x: ptl.softmax(x, -1).sum(), (ptl.randn(3, 4, requires_grad=True),))
    kinds = [n.kind for n in f.graph.nodes if n.kind.startswith("aten::")]
    assert kinds == ["aten::softmax", "aten::sum"]
    assert not ptl._C._jit_is_tracing()


@pytest.mark.parametrize("convert,what", [
    (bool, "boolean"), (int, "integer"), (float, "float"),
    (lambda t: t.item(), "number"), (lambda t: t.tolist(), "list"),
    (lambda t: [0, 1, 2][t.long()], "integer"),
])
def test_python_values_warn(convert, what):
    def fn(x):
        convert(x.sum())
        return x + 1

    with pytest.warns(jit.TracerWarning) as rec:
        jit.trace(fn, (ptl.ones(1),), check_trace=False)
    assert [str(w.message) for w in rec] == [WARNING.format(what)]


def test_no_warning_outside_a_trace():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bool(ptl.ones(1))
        ptl.ones(1).item()


@torch_ref
def test_warning_text_matches_torch():
    with pytest.warns(torch.jit.TracerWarning) as rec:
        torch.jit.trace(lambda x: x * bool(x.sum() > 0), torch.ones(2), check_trace=False)
    assert WARNING.format("boolean") in [str(w.message) for w in rec]


def test_check_trace_graphs_differ():
    calls = []

    def fn(x):
        calls.append(1)
        return x + 1 if len(calls) % 2 else x - 1

    with pytest.raises(jit.TracingCheckError,
                       match=r"^Tracing failed sanity checks!\nERROR: Graphs differed across "
                             r"invocations!"):
        jit.trace(fn, (ptl.ones(2),))


def test_check_trace_constants_differ():
    state = [0.0]

    def fn(x):
        state[0] += 1
        return x * ptl.tensor(state[0])

    with pytest.raises(jit.TracingCheckError, match=r"ERROR: Tensor-valued Constant nodes "
                                                    r"differed in value across invocations"):
        jit.trace(fn, (ptl.ones(2),))


def test_check_trace_outputs_differ():
    with pytest.warns(jit.TracerWarning, match=r"^Output nr 1\. of the traced function does "
                                               r"not match the corresponding output of the "
                                               r"Python function"):
        jit.trace(lambda x: x + ptl.rand(2), (ptl.ones(2),))


def test_module_shares_parameters_and_state_dict():
    model = make_mlp(ptl)
    m = jit.trace(model, ptl.randn(4, 3))
    assert list(m.state_dict()) == list(model.state_dict())
    assert all(a is b for a, b in zip(m.parameters(), model.parameters()))
    x = ptl.randn(4, 3)
    np.testing.assert_array_equal(m(x).detach().numpy(), model(x).detach().numpy())
    np.testing.assert_array_equal(m.forward(x).detach().numpy(), model(x).detach().numpy())
    with ptl.no_grad():
        model.fc1.bias.add_(1.0)
    np.testing.assert_array_equal(m(x).detach().numpy(), model(x).detach().numpy())


def test_buffers_and_in_place_ops():
    class Norm(ptl.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", ptl.full((3,), 2.0))

        def forward(self, x):
            y = x.clone()
            y.mul_(self.scale)
            return y.add_(1)

    m = jit.trace(Norm(), ptl.randn(2, 3))
    assert 'prim::GetAttr[name="scale"]' in str(m.graph)
    assert [n.kind for n in m.graph.nodes if n.kind.startswith("aten::")] == \
        ["aten::clone", "aten::mul_", "aten::add_"]
    x = ptl.randn(2, 3)
    np.testing.assert_allclose(m(x).numpy(), x.numpy() * 2 + 1, rtol=1e-6)


def test_guards_retrace_on_broken_assumptions():
    f = jit.trace(lambda x, n: x * n, (ptl.ones(2), 3))
    assert f.cache_info() == jit.CacheInfo(0, 0, 8, 1)
    np.testing.assert_array_equal(f(ptl.ones(2), 3).numpy(), [3, 3])
    assert f.cache_info().hits == 1
    np.testing.assert_array_equal(f(ptl.ones(2), 4).numpy(), [4, 4])   # a Python scalar
    np.testing.assert_array_equal(f(ptl.ones(3), 4).numpy(), [4, 4, 4])   # sizes
    assert f(ptl.ones(3, dtype=ptl.float64), 4).dtype == ptl.float64   # dtype
    assert f.cache_info() == jit.CacheInfo(1, 3, 8, 4)


def test_guards_list_structure_and_bounded_cache():
    f = jit.trace(lambda xs: xs[0] + xs[-1], ([ptl.ones(2), ptl.ones(2)],), cache_size=2)
    three = [ptl.ones(2), ptl.zeros(2), ptl.full((2,), 5.0)]
    np.testing.assert_array_equal(f(three).numpy(), [6, 6])
    f([ptl.ones(4), ptl.ones(4)])
    assert f.cache_info() == jit.CacheInfo(0, 2, 2, 2)


def test_guards_raise_naming_the_assumption():
    f = jit.trace(lambda x, n: x * n, (ptl.ones(2), 3), on_guard_failure="raise")
    with pytest.raises(RuntimeError, match=r"the trace assumed tensor input 0 has sizes \[2\], "
                                           r"but got \[5\]"):
        f(ptl.ones(5), 3)
    with pytest.raises(RuntimeError, match=r"the trace assumed inputs structured as "
                                           r"\(Tensor, 3\), but got \(Tensor, 4\)"):
        f(ptl.ones(2), 4)
    with pytest.raises(RuntimeError, match="has dtype torch.float32, but got torch.float64"):
        f(ptl.ones(2, dtype=ptl.float64), 3)
    with pytest.raises(ValueError, match="on_guard_failure must be 'retrace' or 'raise'"):
        jit.trace(lambda x: x, (ptl.ones(1),), on_guard_failure="replay")


def test_guard_signature_tells_apart_every_guarded_field():
    """_C._jit_guard_signature, the fast path of the guard check for tensor-only calls: equal
    exactly when sizes, dtype, device and requires_grad agree input by input."""
    sig = ptl._C._jit_guard_signature
    x = ptl.ones(2, 3)
    same = [(ptl.zeros(2, 3),), (ptl.ones(2, 3).t().contiguous().t(),)]
    for inputs in same:
        assert sig(inputs) == sig((x,))
    different = [(ptl.ones(3, 2),), (ptl.ones(6),), (ptl.ones(2, 3, 1),), (ptl.ones(()),),
                 (ptl.ones(1),), (ptl.ones(0),), (ptl.ones(0, 0),),
                 (ptl.ones(2, 3, dtype=ptl.float64),), (ptl.ones(2, 3, requires_grad=True),),
                 (ptl.ones(2, 3, device="meta"),), (x, x), ()]
    sigs = [sig(inputs) for inputs in different]
    assert sig((x,)) not in sigs and len(set(sigs)) == len(sigs)
    assert sig((x, 3)) is None and sig(([x],)) is None
    with pytest.raises(TypeError, match="_jit_guard_signature expects a tuple"):
        sig([x])


def test_guards_after_repeated_calls_still_check_every_assumption():
    """A call like the last one skips building the guard key; a call that differs from it
    in any guarded field still retraces, or raises, as the first call would."""
    f = jit.trace(lambda x: x * 2, (ptl.ones(2, 3),))
    variants = [ptl.ones(2, 3), ptl.ones(3, 2), ptl.ones(6), ptl.ones(2, 3, dtype=ptl.float64),
                ptl.ones(2, 3, requires_grad=True)]
    for _ in range(2):
        for v in variants:
            for _ in range(3):
                out = f(v)
                assert out.shape == v.shape and out.dtype == v.dtype
                assert out.requires_grad == v.requires_grad
    assert f.cache_info() == jit.CacheInfo(6 * 5 - 4, 4, 8, 5)
    g = jit.trace(lambda x: x + 1, (ptl.ones(2),), on_guard_failure="raise")
    for _ in range(3):
        np.testing.assert_array_equal(g(ptl.ones(2)).numpy(), [2, 2])
    with pytest.raises(RuntimeError, match=r"the trace assumed tensor input 0 has sizes \[2\], "
                                           r"but got \[3\]"):
        g(ptl.ones(3))
    with pytest.raises(RuntimeError, match="has requires_grad False, but got True"):
        g(ptl.ones(2, requires_grad=True))
    np.testing.assert_array_equal(g(ptl.ones(2)).numpy(), [2, 2])
    assert g.cache_info() == jit.CacheInfo(4, 2, 8, 1)


def test_gradcheck_through_traced_function_and_module():
    x = ptl.randn(3, 4, dtype=ptl.float64, requires_grad=True)
    w = ptl.randn(4, 4, dtype=ptl.float64, requires_grad=True)
    f = jit.trace(lambda a, b: (a @ b).tanh().sum(-1), (x, w))
    assert ptl.autograd.gradcheck(f, (x, w))
    model = make_mlp(ptl).double()
    m = jit.trace(model, ptl.randn(4, 3, dtype=ptl.float64))
    xin = ptl.randn(4, 3, dtype=ptl.float64, requires_grad=True)
    assert ptl.autograd.gradcheck(m, (xin,))
    m(xin).sum().backward()
    traced_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(xin).sum().backward()
    for a, p in zip(traced_grads, model.parameters()):
        np.testing.assert_allclose(a.numpy(), p.grad.numpy(), rtol=1e-12)


def test_trace_errors():
    with pytest.raises(RuntimeError, match="Only tensors, lists and tuples of tensors can be "
                                           "output from traced functions, got dict"):
        jit.trace(lambda x: {"y": x + 1}, (ptl.ones(1),))
    with pytest.raises(RuntimeError, match="Type 'object' cannot be traced"):
        jit.trace(lambda x, o: x, (ptl.ones(1), object()))
    with pytest.raises(RuntimeError, match="a trace is already running"):
        jit.trace(lambda x: jit.trace(lambda y: y + 1, (x,)), (ptl.ones(1),))
    assert not ptl._C._jit_is_tracing()


def test_list_returns_unpack_into_values(tmp_path):
    f = jit.trace(lambda x: x.split(2)[1] * 2, (ptl.arange(6.0),))
    assert "prim::ListUnpack" in [n.kind for n in f.graph.nodes]
    x = ptl.randn(6)
    np.testing.assert_array_equal(f(x).numpy(), x.numpy()[2:4] * 2)
    jit.save(f, str(tmp_path / "f.pt"))
    np.testing.assert_array_equal(jit.load(str(tmp_path / "f.pt"))(x).numpy(),
                                  x.numpy()[2:4] * 2)
