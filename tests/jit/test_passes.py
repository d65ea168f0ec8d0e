"""jit.passes, jit.freeze and the fused elementwise chains: each pass keeps what the graph
computes (NumPy float64 as reference), and each peephole rule fires, and only when safe."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import jit
from pytorchlite.jit import passes
from pytorchlite.jit._interpreter import Interpreter
from helpers import rerun_with_capability


def kinds(graph):
    return [n.kind for n in graph.nodes if not n.kind.startswith("prim::Constant")]


def traced_graph(fn, *inputs):
    return passes.copy_graph(jit.trace(fn, inputs, check_trace=False).graph)


def run(graph, *inputs):
    return Interpreter(graph).run(*inputs)


def test_dead_code_elimination_keeps_writes():
    def fn(x):
        x.exp()   # a result nothing uses
        y = x.clone()
        y.add_(1)
        return x * 2

    g = passes.eliminate_dead_code(traced_graph(fn, ptl.ones(3)))
    assert kinds(g) == ["aten::clone", "aten::add_", "aten::mul"]


def test_common_subexpression_elimination():
    def fn(x):
        return x.sin() * 2 + x.sin() * 2 + ptl.rand(3) + ptl.rand(3)

    g = passes.eliminate_common_subexpression(traced_graph(fn, ptl.ones(3)))
    assert kinds(g).count("aten::sin") == 1 and kinds(g).count("aten::mul") == 1
    assert kinds(g).count("aten::rand") == 2   # random nodes are never merged
    consts = [n for n in g.nodes if n.kind == "prim::Constant" and n.outputs[0].type == "int"]
    assert len({repr(n.attrs["value"]) for n in consts}) == len(consts)


def test_constant_propagation_folds_by_calling_the_op():
    k = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64)

    def fn(x):
        return x + (k * 3).exp().sum()

    g = passes.propagate_constants(traced_graph(fn, ptl.zeros(3, dtype=ptl.float64)))
    assert kinds(g) == ["aten::add"]
    x = np.random.default_rng(0).standard_normal(3)
    np.testing.assert_allclose(run(g, ptl.tensor(x)).numpy(),
                               x + np.exp(np.array([3.0, 6.0, 9.0])).sum(), rtol=1e-12)


@pytest.mark.parametrize("fn,shape", [
    (lambda x: x * 1, (2, 3)), (lambda x: 1 * x, (2, 3)), (lambda x: x / 1, (2, 3)),
    (lambda x: x + 0, (2, 3)), (lambda x: x - 0, (2, 3)), (lambda x: x ** 1, (2, 3)),
    (lambda x: x.t().t(), (2, 3)), (lambda x: x.transpose(0, 1).transpose(0, 1), (2, 3)),
    (lambda x: x.transpose(0, 1).transpose(1, 0), (2, 3)), (lambda x: -(-x), (2, 3)),
])
def test_peephole_rules(fn, shape):
    x = ptl.randn(*shape, dtype=ptl.float64)
    g = passes.peephole(traced_graph(fn, x))
    assert kinds(g) == []
    assert g.outputs[0] is g.inputs[0]
    np.testing.assert_array_equal(run(g, x).numpy(), fn(x).numpy())


@pytest.mark.parametrize("fn,x", [
    (lambda x: x * 1.0, ptl.ones(3, dtype=ptl.int64)),        # int * float is a float
    (lambda x: x + 0, ptl.ones(3, dtype=ptl.bool)),           # bool + int is an int
    (lambda x: x.transpose(0, 1).transpose(0, 2), ptl.ones(2, 2, 2)),
])
def test_peephole_keeps_nodes_that_change_the_type(fn, x):
    g = passes.peephole(traced_graph(fn, x))
    assert kinds(g) != []
    np.testing.assert_array_equal(run(g, x).numpy(), fn(x).numpy())


def test_peephole_leaves_graphs_that_write():
    def fn(x):
        y = x * 1
        y.add_(1)
        return y

    g = passes.peephole(traced_graph(fn, ptl.ones(2)))
    assert "aten::mul" in kinds(g)
    x = ptl.ones(2)
    run(g, x)
    np.testing.assert_array_equal(x.numpy(), [1, 1])


class Block(ptl.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ptl.nn.Linear(4, 4)
        self.register_buffer("shift", ptl.full((4,), 0.5))

    def forward(self, x):
        return ((self.fc(x) * 2 + self.shift).sigmoid() - 0.25).tanh()


def test_freeze_inlines_parameters():
    model = Block().eval()
    m = jit.trace(model, ptl.randn(3, 4))
    frozen = jit.freeze(m)
    assert "prim::GetAttr" not in str(frozen.graph)
    assert list(frozen.state_dict()) == []
    x = ptl.randn(3, 4)
    np.testing.assert_array_equal(frozen(x).detach().numpy(), model(x).detach().numpy())
    np.testing.assert_array_equal(frozen(ptl.randn(5, 4)).shape, (5, 4))   # retraces
    with pytest.raises(RuntimeError, match=r"^Freezing is currently only implemented for "
                                           r"modules in eval mode. Please call .eval\(\) on "
                                           r"your module before freezing.$"):
        jit.freeze(jit.trace(Block(), ptl.randn(3, 4)))
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
        jit.freeze(model)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 300), (2, 3, 5)])
def test_fused_chain_matches_eager_and_numpy(dtype, shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    b = rng.standard_normal(shape)

    def fn(x, y):
        return ((x * 2 + y).relu() - 0.5).exp().sigmoid() / (y.abs() + 1).sqrt()

    x, y = ptl.tensor(a, dtype=dtype), ptl.tensor(b, dtype=dtype)
    g = passes.fuse_pointwise(traced_graph(fn, x, y))
    assert kinds(g) == ["prim::FusionGroup"]
    out = run(g, x, y)
    # exp, sigmoid: eager mode's vector formulas in both dtypes
    np.testing.assert_array_equal(out.numpy(), fn(x, y).numpy())
    e = np.exp(np.maximum(a * 2 + b, 0) - 0.5)
    ref = 1 / (1 + np.exp(-e)) / np.sqrt(np.abs(b) + 1)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6 if dtype == ptl.float32 else 1e-12)


def test_fused_chain_falls_back_where_the_program_cannot_run():
    def fn(x):
        return (x * 3).tanh().neg()

    g = passes.fuse_pointwise(traced_graph(fn, ptl.randn(4, 5)))
    assert kinds(g) == ["prim::FusionGroup"]
    assert "with prim::FusionGroup_0 = graph(" in str(g)
    x = ptl.randn(5, 4).t()   # non-contiguous
    np.testing.assert_array_equal(run(g, x).numpy(), fn(x).numpy())
    xg = ptl.randn(4, 5, dtype=ptl.float64, requires_grad=True)
    g64 = passes.fuse_pointwise(traced_graph(fn, xg.detach()))
    assert ptl.autograd.gradcheck(lambda t: run(g64, t), (xg,))


def test_intermediates_used_elsewhere_are_not_fused():
    def fn(x):
        y = x.exp()
        return y.neg().abs(), y

    g = passes.fuse_pointwise(traced_graph(fn, ptl.randn(3)))
    assert "aten::exp" in kinds(g)


def test_optimize_for_inference_saves_and_loads(tmp_path):
    model = Block().eval()
    m = jit.optimize_for_inference(jit.trace(model, ptl.randn(3, 4)))
    assert "prim::FusionGroup" in kinds(m.graph)
    x = ptl.randn(3, 4)
    with ptl.no_grad():
        np.testing.assert_array_equal(m(x).numpy(), model(x).numpy())
    jit.save(m, str(tmp_path / "m.pt"))
    loaded = jit.load(str(tmp_path / "m.pt"))
    assert "prim::FusionGroup" not in str(loaded.graph)
    with ptl.no_grad():
        np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())


def test_program_errors():
    with pytest.raises(ValueError, match="instruction 0 of a pointwise program is invalid"):
        ptl._C._jit_run_pointwise_program([(0, 0, 5)], [ptl.ones(2)], [])
    with pytest.raises(ValueError, match="a pointwise program has at most 32 registers"):
        ptl._C._jit_run_pointwise_program([(0, 0, 0)] * 40, [ptl.ones(2)], [])
    assert ptl._C._jit_run_pointwise_program([(0, 0, 1)], [ptl.ones(2), ptl.ones(3)], []) \
        is None


@pytest.mark.parametrize("n", [5, 8, 1003])
def test_every_program_instruction_matches_eager(n):
    """One instruction at a time on float32 values with NaN, infinities and signed zeros, over
    lengths with and without a partial group of 8 (the vector loops and the scalar tail)."""
    rng = np.random.default_rng(n)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3.5], np.float32)
    a = np.resize(np.concatenate([special, rng.standard_normal(n).astype(np.float32) * 4]), n)
    b = np.resize(np.concatenate([rng.standard_normal(n).astype(np.float32) * 4,
                                  special[::-1]]), n)
    x, y = ptl.tensor(a), ptl.tensor(b)
    binary = {"add", "sub", "mul", "div", "maximum", "minimum"}
    exact = binary | {"neg", "abs", "relu", "square", "exp", "sigmoid", "tanh", "reciprocal"}
    for op, code in passes._PROGRAM_OPS.items():
        if op in binary:
            out = ptl._C._jit_run_pointwise_program([(code, 0, 1)], [x, y], [])
            expected = getattr(ptl, op)(x, y)
        else:
            out = ptl._C._jit_run_pointwise_program([(code, 0, 0)], [x], [])
            expected = getattr(ptl, op)(x)
        if op in exact:
            np.testing.assert_array_equal(out.numpy(), expected.numpy(), err_msg=op)
        else:
            np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6, err_msg=op)


@pytest.mark.parametrize("n", [3, 4, 8, 9, 1003])
def test_float64_program_maps_match_eager(n):
    """float64 exp, sigmoid, tanh, sin and cos run eager mode's vector maps, so the same bits
    as eager mode, over lengths with and without a partial vector, with NaN, infinities,
    signed zeros and sin's huge arguments."""
    rng = np.random.default_rng(n)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e22, -800.0, 40.0])
    a = np.resize(np.concatenate([special, rng.standard_normal(n) * 4]), n)
    x = ptl.tensor(a, dtype=ptl.float64)
    for op in ("exp", "sigmoid", "tanh", "sin", "cos"):
        out = ptl._C._jit_run_pointwise_program([(passes._PROGRAM_OPS[op], 0, 0)], [x], [])
        np.testing.assert_array_equal(out.numpy(), getattr(ptl, op)(x).numpy(), err_msg=op)


def test_program_matches_eager_on_the_portable_engine():
    """Without vector code the program's scalar loops and eager mode's portable loops share
    their formulas (sigmoid: scalar_math.h's), so the bits still agree."""
    rerun_with_capability(__file__, "default", "-k", "matches_eager and not portable")
