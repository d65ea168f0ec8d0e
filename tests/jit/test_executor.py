"""The C executor of jit graphs (src/jit/graph_exec.c, Note [Which graphs run in C] in
pytorchlite/jit/_interpreter.py): every step kind against the Python steps and eager mode,
autograd and the profiler through it, the guards of a module graph, lowering errors, the C
API (ptl_api_jit_load / run / free) and the CLI."""
import copy

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import jit, nn
from pytorchlite.jit import _interpreter, _ir
from pytorchlite.jit._interpreter import Interpreter, lower
from helpers import assert_no_leak, make, to_numpy


def _t(shape, dtype, seed, layout="contiguous", low=-5, high=5):
    return make(shape, dtype, layout, seed, low, high)[0]


def _np(t):
    return to_numpy(t.detach())


def _interp(traced):
    return traced._cache.first.interp


def _check_function(fn, *inputs, rtol=1e-6):
    """Traces fn, checks its graph runs in C, and compares with the Python steps and eager
    mode (NumPy arrays, float64 where the inputs are)."""
    traced = jit.trace(fn, inputs, check_trace=False)
    interp = _interp(traced)
    assert interp.program is not None, interp.graph
    got, steps, eager = traced(*inputs), interp.run_steps(*inputs), fn(*inputs)
    flat = (lambda o: o if isinstance(o, tuple) else (o,))
    assert type(got) is type(eager)
    for g, s, e in zip(flat(got), flat(steps), flat(eager)):
        _close(_np(g), _np(e), rtol=rtol, atol=1e-12)
        np.testing.assert_array_equal(_np(g), _np(s))
    return traced


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.out(self.fc2(self.fc1(x).relu()).tanh())


def _mlp():
    ptl.manual_seed(0)
    return _MLP()


def _close(actual, expected, rtol=1e-7, atol=1e-12):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape", [(1, 6), (5, 6), (0, 6)])
def test_module_ops_and_getattr(shape):
    model = _mlp().double()
    x = _t(shape, ptl.float64, seed=1)
    traced = jit.trace(model, (x,))
    out = traced(x)
    assert _interp(traced).program is not None
    with ptl.no_grad():
        _close(_np(out), _np(model(x)))
        np.testing.assert_array_equal(_np(out),
                                      _np(_interp(traced).run_steps(traced, x)))


def test_buffers_and_non_contiguous_input():
    ptl.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5)).double().eval()
    model[1].running_mean.copy_(ptl.arange(5, dtype=ptl.float64))
    x = _t((7, 4), ptl.float64, seed=2)
    traced = jit.trace(model, (x,))
    xt = _t((7, 4), ptl.float64, seed=3, layout="transposed")
    with ptl.no_grad():
        _close(_np(traced(xt)), _np(model(xt)))
    assert _interp(traced).program is not None


def test_constants_of_every_kind():
    x = _t((3, 4), ptl.float64, seed=4)
    y = _t((3, 4), ptl.float64, seed=5, low=1, high=3)
    _check_function(lambda a: a.sum(dim=[1], keepdim=True) * 2.5 - 1, x)   # int[], float, int
    _check_function(lambda a: a.to(ptl.float32).double(), x)                 # ScalarType
    _check_function(lambda a, b: ptl.div(a, b, rounding_mode="floor"), x, y)  # str
    _check_function(lambda a: nn.functional.leaky_relu(a, 0.2), x)           # float
    _check_function(lambda a: a.clamp(min=0), x)                             # int as Scalar
    _check_function(lambda a: a.mul(2.0), _t((), ptl.float64, seed=6))      # 0-dim


def test_lists_unpack_and_tuple_output():
    x = _t((3, 4), ptl.float64, seed=7)
    y = _t((3, 2), ptl.float64, seed=8)
    _check_function(lambda a, b: ptl.cat([a, b], 1), x, y)                   # Tensor[]
    _check_function(lambda a, b: a * b[0] + 1, x, _t((1, 4), ptl.float64, seed=19))  # broadcast
    _check_function(lambda a: a.reshape(a.size(0) * 2, -1), x)               # int[] at run time

    def halves(a):
        p, q = a.chunk(2, 1)                                                  # ListUnpack
        return p * q, p + q                                                   # TupleConstruct
    traced = _check_function(halves, x)
    kinds = [n.kind for n in traced.graph.nodes]
    assert "prim::ListUnpack" in kinds and "prim::TupleConstruct" in kinds
    _check_function(halves, _t((0, 4), ptl.float64, seed=9))


class _Chain(nn.Module):
    def forward(self, x, y):
        return ((x * 2 + y).relu() - 0.5).exp().sigmoid()


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_fusion_group(dtype):
    x, y = _t((16, 9), dtype, seed=10), _t((16, 9), dtype, seed=11)
    fused = jit.optimize_for_inference(jit.trace(_Chain(), (x, y)))
    assert [n.kind for n in fused.graph.nodes] == ["prim::FusionGroup"]
    with ptl.no_grad():
        out = fused(x, y)
        assert _interp(fused).program is not None
        _close(_np(out), _np(_Chain()(x, y)), rtol=1e-6 if dtype ==
                     ptl.float32 else 1e-12)
        xt = _t((16, 9), dtype, seed=12, layout="transposed")   # the subgraph's program
        _close(_np(fused(xt, y)), _np(_Chain()(xt, y)), rtol=1e-6)


def test_fusion_group_with_autograd_runs_its_subgraph():
    x = _t((4, 5), ptl.float64, seed=13).requires_grad_()
    y = _t((4, 5), ptl.float64, seed=14)
    fused = jit.optimize_for_inference(jit.trace(_Chain(), (x.detach(), y)))
    fused(x.detach(), y)
    out = fused(x, y)
    assert out.grad_fn is not None
    (gx,) = ptl.autograd.grad(out.sum(), x)
    x2 = x.detach().requires_grad_()
    (ge,) = ptl.autograd.grad(_Chain()(x2, y).sum(), x2)
    _close(_np(gx), _np(ge))


def test_autograd_through_the_executor():
    model = _mlp().double()
    x = _t((4, 6), ptl.float64, seed=15)
    traced = jit.trace(model, (x,))
    traced(x).pow(2).sum().backward()
    assert _interp(traced).program is not None
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(x).pow(2).sum().backward()
    for g, p in zip(got, model.parameters()):
        _close(_np(g), _np(p.grad))


def test_gradcheck_through_the_executor():
    def f(a, b):
        return (a.matmul(b).tanh() * a.sum(1, keepdim=True)).exp()
    a = _t((3, 4), ptl.float64, seed=16).requires_grad_()
    b = _t((4, 2), ptl.float64, seed=17).requires_grad_()
    traced = jit.trace(f, (a, b))
    assert _interp(traced).program is not None
    assert ptl.autograd.gradcheck(traced, (a, b))


def test_profiler_sees_the_ops():
    model = _mlp()
    x = ptl.randn(2, 6)
    traced = jit.trace(model, (x,))
    traced(x)
    with ptl.profiler.profile() as prof:
        traced(x)
    names = [e.name for e in prof.events()]
    assert names.count("aten::addmm") == 3 and "aten::tanh" in names


def test_guards_follow_replaced_attributes_and_modules():
    model = _mlp()
    x = ptl.randn(2, 6)
    traced = jit.trace(model, (x,))
    before = traced(x)
    program = _interp(traced).program
    with ptl.no_grad():
        traced.fc1.weight.mul_(2)                       # in place: the same program sees it
        assert _interp(traced).program is program
        _close(_np(traced(x)), _np(model(x)), rtol=1e-6)
        bias = nn.Parameter(ptl.ones(3))
        traced.out.bias = model.out.bias = bias       # replaced: lowered again
        _close(_np(traced(x)), _np(model(x)), rtol=1e-6)
        _close(_np(traced(x)), _np(_interp(traced).run_steps(traced, x)))
        assert not np.allclose(_np(traced(x)), _np(before))
    assert _interp(traced).program is not program
    other = copy.deepcopy(traced)
    with ptl.no_grad():
        _close(_np(other(x)), _np(traced(x)))


def test_no_leak():
    model = _mlp()
    x = ptl.randn(1, 6)
    traced = jit.trace(model, (x,))
    with ptl.no_grad():
        assert_no_leak(lambda: traced(x))
    halves = jit.trace(lambda a: a.chunk(2, 1), (ptl.randn(2, 4),))
    assert_no_leak(lambda: halves(ptl.randn(2, 4)))


def test_unpack_length_mismatch():
    g = jit.trace(lambda a: a.chunk(2, 1), (ptl.randn(2, 4),)).graph
    assert Interpreter(g).program is not None
    chunk3 = ptl._C._jit_program(
        7, 1, [(1, "int", 2), (2, "int", 1)],
        [("op", "aten::chunk", "", [0, 1, 2], [3]), ("unpack", 3, [4, 5, 6])], [4, 5, 6], True,
        None, ())
    with pytest.raises(RuntimeError, match="prim::ListUnpack: the graph expects 3 items, the "
                                           "list has 2"):
        chunk3(ptl.randn(2, 4))


def test_lowering_errors():
    model = _mlp()
    traced = jit.trace(model, (ptl.randn(1, 6),))
    g = traced.graph
    with pytest.raises(RuntimeError, match="a module graph is lowered for its module"):
        lower(g)
    plain = nn.Module()
    plain.scale = 2.0
    with pytest.raises(RuntimeError, match="cannot lower prim::GetAttr 'fc1', a plain Python "
                                           "attribute"):
        lower(g, plain)
    f = jit.trace(lambda a: a + 1, (ptl.randn(2),)).graph
    f.nodes[-1].kind = "prim::RaiseException"
    with pytest.raises(RuntimeError, match="cannot lower prim::RaiseException"):
        lower(f)
    flags = _ir.Graph()
    x = flags.add_input("Tensor", "x")
    flags.create("prim::ListConstruct", [flags.constant(True, "bool")], ["bool[]"])
    flags.outputs = [flags.create("aten::neg", [x], ["Tensor"]).outputs[0]]
    with pytest.raises(RuntimeError, match="builds int, float and tensor lists only"):
        lower(flags)
    interp = Interpreter(flags)
    assert interp.program is None   # the Python steps run it
    _close(_np(interp.run(ptl.ones(2))), -np.ones(2))
    with pytest.raises(RuntimeError, match="unknown operator aten::nope.Tensor"):
        ptl._C._jit_program(2, 1, [], [("op", "aten::nope", "Tensor", [0], [1])], [1], False,
                            None, ())
    with pytest.raises(RuntimeError, match="reads slot 5, which no earlier node or input "
                                           "defines"):
        ptl._C._jit_program(2, 1, [], [("op", "aten::neg", "", [5], [1])], [1], False, None,
                            ())
    with pytest.raises(RuntimeError, match="writes slot 0, which is out of range or already "
                                           "defined"):
        ptl._C._jit_program(2, 1, [], [("op", "aten::neg", "", [0], [0])], [1], False, None,
                            ())
    with pytest.raises(RuntimeError, match="aten::neg takes 1 arguments and returns 1 values, "
                                           "the node has 1 inputs and 2 outputs"):
        ptl._C._jit_program(3, 1, [], [("op", "aten::neg", "", [0], [1, 2])], [1], False,
                            None, ())
    with pytest.raises(RuntimeError, match="cannot lower a step of this kind"):
        ptl._C._jit_program(2, 1, [], [("loop", 0)], [1], False, None, ())
    with pytest.raises(RuntimeError, match="builds int, float and tensor lists only"):
        ptl._C._jit_program(2, 1, [], [("list", "bool[]", [0], 1)], [1], False, None, ())
    with pytest.raises(TypeError, match=r"a guard is a \(dict, name, object\) tuple"):
        ptl._C._jit_program(2, 1, [], [("op", "aten::neg", "", [0], [1])], [1], False, None,
                            (("weight",),))
    neg = ptl._C._jit_program(2, 1, [], [("op", "aten::neg", "", [0], [1])], [1], False, None,
                              ())
    with pytest.raises(TypeError, match="the graph takes 1 inputs, 2 were given"):
        neg(ptl.ones(1), ptl.ones(1))
    with pytest.raises(TypeError, match="expected a Tensor or a number for input 0 of the "
                                        "graph, got str"):
        neg("x")
    # a number for a Tensor argument is a wrapped number, as in the Python steps' op calls
    assert neg(1).tolist() == ptl._C._op("aten::neg", "")(1).tolist() == -1
    assert neg(2.5).dtype == ptl._C._op("aten::neg", "")(2.5).dtype


EXTENSION = r"""
#include <stdlib.h>

static PtlApiJitModule *model;

/* loads the file named by PTL_JIT_TEST_MODEL: 100 * inputs + outputs, or -1 */
int64_t
model_load(void)
{
    ptl_api_jit_free(model);
    model = ptl_api_jit_load(getenv("PTL_JIT_TEST_MODEL"));
    if (model == NULL) {
        return -1;
    }
    return 100 * ptl_api_jit_num_inputs(model) + ptl_api_jit_num_outputs(model);
}

PtlApiTensor *
model_run(PtlApiTensor *x)
{
    PtlApiTensor *out[1];
    return ptl_api_jit_run(model, &x, 1, out) < 0 ? NULL : out[0];
}

/* the run with two inputs, one too many */
PtlApiTensor *
model_run_two(PtlApiTensor *x)
{
    PtlApiTensor *in[2] = {x, x}, *out[1];
    return ptl_api_jit_run(model, in, 2, out) < 0 ? NULL : out[0];
}

void
model_free(void)
{
    ptl_api_jit_free(model);
    model = NULL;
}
"""


def test_c_api_loads_and_runs_a_saved_mlp(tmp_path, monkeypatch):
    cpp_extension = pytest.importorskip("pytorchlite.utils.cpp_extension",
                                        reason="the C extension builder")
    monkeypatch.setenv("PTL_EXTENSIONS_DIR", str(tmp_path / "ext"))
    ext = cpp_extension.load_inline("jit_c_api", EXTENSION,
                                    functions=["model_load", "model_run", "model_run_two",
                                               "model_free"])
    model = _mlp()
    x = ptl.randn(3, 6)
    jit.save(jit.trace(model, (x,)), str(tmp_path / "mlp.pt"))
    monkeypatch.setenv("PTL_JIT_TEST_MODEL", str(tmp_path / "mlp.pt"))
    assert ext.model_load() == 101
    for shape in [(3, 6), (1, 6), (0, 6)]:
        xi = _t(shape, ptl.float32, seed=18)
        with ptl.no_grad():
            _close(_np(ext.model_run(xi)), _np(model(xi)), rtol=1e-5)
    with pytest.raises(ValueError, match="the graph takes 1 inputs, 2 were given"):
        ext.model_run_two(x)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
        ext.model_run(ptl.randn(2, 5))
    ext.model_free()
    monkeypatch.setenv("PTL_JIT_TEST_MODEL", str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="The provided filename .*missing.pt does not exist"):
        ext.model_load()
    (tmp_path / "bad.pt").write_bytes(b"not a zip")
    monkeypatch.setenv("PTL_JIT_TEST_MODEL", str(tmp_path / "bad.pt"))
    with pytest.raises(RuntimeError, match="pytorchlite.jit.load: the file is not a readable "
                                           "zip archive"):
        ext.model_load()


def test_cli_runs_through_the_executor(tmp_path, monkeypatch, capsys):
    from pytorchlite.jit.__main__ import main
    model = _mlp()
    x = np.random.default_rng(3).standard_normal((2, 6)).astype(np.float32)
    jit.save(jit.trace(model, (ptl.from_numpy(x),)), str(tmp_path / "m.pt"))
    np.save(tmp_path / "x.npy", x)
    lowered = []
    real = _interpreter.lower

    def counting(graph, module=None):
        lowered.append(graph)
        return real(graph, module)
    monkeypatch.setattr(_interpreter, "lower", counting)
    assert main([str(tmp_path / "m.pt"), "--input", str(tmp_path / "x.npy"), "--output",
                 str(tmp_path / "y.npy")]) == 0
    assert lowered and capsys.readouterr().out.startswith("tensor([[")
    with ptl.no_grad():
        _close(np.load(tmp_path / "y.npy"), _np(model(ptl.from_numpy(x))),
                     rtol=1e-6)
