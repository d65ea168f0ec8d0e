"""jit.script: each construct compiled from source against eager Python on random inputs, the
graph with blocks and its text, .code, modules, autograd through scripted code, save/load in a
fresh process, and the errors for what it does not compile."""
import io
import os
import re
import subprocess
import sys
import zipfile
from typing import List, Optional, Tuple

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite import jit, nn
from pytorchlite.autograd import gradcheck
from pytorchlite.jit import passes
from helpers import ROOT, graph_kinds as kinds, torch, torch_ref

HERE = os.path.abspath(__file__)


def rand(*shape, seed=0, dtype=np.float64):
    return ptl.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# ---- functions scripted by the tests (module level: jit.script reads their source) ---------

def sign_scale(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def branches(x, k: int):
    if k < 0:
        y = -x
    elif k == 0:
        return x
    else:
        y = x * float(k)
    return y + 1


def ranges(a: int, b: int, s: int) -> Tuple[int, int, int]:
    t1 = 0
    for i in range(a):
        t1 += i
    t2 = 0
    for i in range(a, b):
        t2 = t2 * 3 + i
    t3 = 0
    for i in range(a, b, s):
        t3 = t3 * 5 + i
    return t1, t2, t3


def while_break_continue(n: int) -> int:
    total = 0
    i = 0
    while i < n:
        i += 1
        if i % 3 == 0:
            continue
        if total > 40:
            break
        total += i * i
    return total


def loops_over_values(x, xs: List[int], t: Tuple[int, float]):
    acc = 0
    for v in xs:
        acc = acc + v
    f = 0.0
    for e in (1, 2.5):
        f = f + e
    rows = x[0] * 0
    for r in x:
        rows = rows + r
    return rows * acc + f + t[1]


def optional_add(x, y: Optional[ptl.Tensor]):
    if y is not None:
        x = x + y
    return x


def optional_and(x, y: Optional[ptl.Tensor]):
    if y is not None and y.sum() > 0:
        return x + y
    return x


def numbers(a: int, b: int, c: float, flag: bool) -> Tuple[int, int, float, float, bool, bool,
                                                          float]:
    q = a // b
    r = a % b
    d = a / b
    p = c ** 2 + a * c - b
    lt = a < b and not flag
    chain = 0 <= a < 100
    return q, r, d, p, lt, chain, -c if flag else c


def helper_scale(x, k: float):
    return x * k


def calls_helper(x):
    return helper_scale(x, 2.0) + helper_scale(x, 0.5)


def bad_helper_call(x):
    return helper_scale(x, x)


def tensor_ops(x):
    y = x[0, 1:3]
    n = x.size(1) + len(x.shape)
    z = x.view(x.size(0) * x.size(1)).sum(0, keepdim=True)
    w = ptl.tanh(x).matmul(x.t())
    return y * n + z, F.relu(w) @ x, x[:, None].dim()


def pair(x) -> Tuple[ptl.Tensor, int]:
    return x * 2, x.shape[0]


def lists_and_tuples(x, flag: bool, n: int):
    a, k = pair(x)
    items: List[int] = []
    for i in range(n):
        items.append(i * k)
    vals, idx = x.max(1)
    y = a if flag or n > 3 else -a
    z = int(x.sum() > 0) + len(items)
    s = 0.0
    for v in items:
        s += float(v)
    return y + vals.sum() * s + z, idx, not flag


def rnn(x, h, w_ih, w_hh):
    for t in range(x.size(0)):
        h = ptl.tanh(x[t] @ w_ih + h @ w_hh)
    return h


# ---- constructs against eager Python --------------------------------------------------------

def test_if_on_a_tensor_value_keeps_both_branches_where_trace_bakes_one_in():
    s = jit.script(sign_scale)
    assert kinds(s.graph).count("prim::If") == 1 and "aten::Bool" in kinds(s.graph)
    pos, neg = rand(3, 4, seed=1).abs(), -rand(3, 4, seed=2).abs()
    for x in (pos, neg):
        np.testing.assert_array_equal(s(x).numpy(), sign_scale(x).numpy())
    with pytest.warns(jit.TracerWarning, match="Converting a tensor to a Python boolean"):
        traced = jit.trace(sign_scale, (pos,), check_trace=False)
    np.testing.assert_array_equal(traced(neg).numpy(), neg.numpy() * 2)   # the branch it saw


def test_elif_else_and_early_return():
    s = jit.script(branches)
    x = rand(2, 3, seed=3)
    for k in (-2, 0, 3):
        np.testing.assert_array_equal(s(x, k).numpy(), branches(x, k).numpy())


@pytest.mark.parametrize("a,b,s", [(0, 0, 1), (4, 9, 2), (7, 2, -2), (3, 11, 4), (5, 5, 3)])
def test_for_over_range_forms(a, b, s):
    assert jit.script(ranges)(a, b, s) == ranges(a, b, s)


def test_range_step_zero_raises():
    with pytest.raises(RuntimeError, match="range\\(\\) arg 3 must not be zero"):
        jit.script(ranges)(1, 2, 0)


@pytest.mark.parametrize("n", [0, 1, 5, 9, 30])
def test_while_with_break_and_continue(n):
    assert jit.script(while_break_continue)(n) == while_break_continue(n)


def test_for_over_list_tuple_and_tensor():
    s = jit.script(loops_over_values)
    x = rand(3, 2, seed=4)
    for xs in ([], [1, 2, 3]):
        np.testing.assert_allclose(s(x, xs, (1, 0.5)).numpy(),
                                   loops_over_values(x, xs, (1, 0.5)).numpy(), rtol=1e-12)
    assert kinds(s.graph).count("prim::Loop") == 2   # the tuple literal is unrolled


def test_optional_is_refined_in_the_branch():
    s = jit.script(optional_add)
    assert s.graph.inputs[1].type == "Tensor?"
    assert "prim::unchecked_cast" in kinds(s.graph)
    x, y = rand(2, 2, seed=5), rand(2, 2, seed=6)
    np.testing.assert_array_equal(s(x, None).numpy(), x.numpy())
    np.testing.assert_array_equal(s(x, y).numpy(), (x.numpy() + y.numpy()))
    a = jit.script(optional_and)
    for yy in (None, y.abs(), -y.abs()):
        np.testing.assert_array_equal(a(x, yy).numpy(), optional_and(x, yy).numpy())


def test_int_float_bool_arithmetic_matches_python():
    s = jit.script(numbers)
    gen = np.random.default_rng(7)
    for _ in range(20):
        a, b = int(gen.integers(-50, 120)), int(gen.integers(1, 9)) * int(gen.choice([-1, 1]))
        c, flag = float(gen.standard_normal()), bool(gen.integers(0, 2))
        assert s(a, b, c, flag) == numbers(a, b, c, flag)
    with pytest.raises(ZeroDivisionError):
        s(1, 0, 1.0, True)


def test_calls_to_python_functions_are_compiled_in_place():
    s = jit.script(calls_helper)
    assert "prim::CallFunction" not in kinds(s.graph)
    x = rand(3, seed=8)
    np.testing.assert_allclose(s(x).numpy(), x.numpy() * 2.5, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Expected a value of type 'float' for argument 'k' "
                                           "but instead found type 'Tensor'"):
        jit.script(bad_helper_call)


@pytest.mark.parametrize("shape", [(2, 3), (4, 5)])
def test_tensor_methods_indexing_and_torch_functions(shape):
    s = jit.script(tensor_ops)
    x = rand(*shape, seed=9)
    got, want = s(x), tensor_ops(x)
    for g, w in zip(got[:2], want[:2]):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    assert got[2] == want[2] == 3
    xn = x.numpy()
    np.testing.assert_allclose(got[0].numpy(), xn[0, 1:3] * (shape[1] + 2) + xn.sum(),
                               rtol=1e-12)


@pytest.mark.parametrize("flag,n", [(True, 0), (False, 2), (False, 5)])
def test_lists_tuples_multiple_returns_and_short_circuit(flag, n):
    s = jit.script(lists_and_tuples)
    x = rand(3, 4, seed=17)
    got, want = s(x, flag, n), lists_and_tuples(x, flag, n)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12)
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
    assert got[2] is want[2]
    assert "torch.append(items, " in s.code    # a node kept for its effect prints as a statement


def test_broadcast_and_non_contiguous_inputs():
    s = jit.script(optional_add)
    x = rand(4, 3, seed=18).t()                    # [3, 4], not contiguous
    y = rand(3, 1, seed=19)
    assert not x.is_contiguous()
    np.testing.assert_array_equal(s(x, y).numpy(), x.numpy() + y.numpy())
    got, want = jit.script(lists_and_tuples)(x, False, 3), lists_and_tuples(x, False, 3)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12)
    for f in (jit.script(tensor_ops), tensor_ops):    # x.view fails alike
        with pytest.raises(RuntimeError, match="view size is not compatible with input "
                                               "tensor's size and stride"):
            f(x)


def test_size_0_and_0_dim_inputs():
    s = jit.script(sign_scale)
    empty = ptl.zeros(0, 3, dtype=ptl.float64)
    assert s(empty).shape == (0, 3)
    scalar = ptl.tensor(-2.0, dtype=ptl.float64)
    assert s(scalar).item() == -3.0


def test_arguments_are_checked_and_defaults_filled():
    def with_default(x, k: int = 3):
        return x * k
    s = jit.script(with_default)
    x = rand(2, seed=10)
    np.testing.assert_array_equal(s(x).numpy(), x.numpy() * 3)
    np.testing.assert_array_equal(s(x, k=4).numpy(), x.numpy() * 4)
    with pytest.raises(RuntimeError, match="with_default\\(\\) Expected a value of type 'int' "
                                           "for argument 'k' but instead found type 'float'"):
        s(x, 1.5)
    with pytest.raises(RuntimeError, match="missing value for argument 'x'"):
        s()


# ---- the graph, .code and the passes --------------------------------------------------------

OPTIONAL_GRAPH = """\
graph(%x : Tensor,
      %y : Tensor?):
  %2 : NoneType = prim::Constant()
  %3 : bool = aten::__isnot__(%y, %2)
  %x.1 : Tensor = prim::If(%3)
    block0():
      %y.1 : Tensor = prim::unchecked_cast(%y)
      %4 : int = prim::Constant[value=1]()
      %x.2 : Tensor = aten::add(%x, %y.1, %4)
      -> (%x.2)
    block1():
      -> (%x)
  return (%x.1)
"""


def test_graph_prints_blocks_as_torchscript():
    assert str(jit.script(optional_add).graph) == OPTIONAL_GRAPH
    text = str(jit.script(while_break_continue).graph)
    assert re.search(r"\n  %i : int, %total : int = prim::Loop\(%\d+, %\d+, %\d+, %\d+\)\n"
                     r"    block0\(%\d+ : int, %i\.1 : int, %total\.1 : int\):\n", text)
    assert re.search(r"\n      -> \(%\d+, %\d+, %\d+\)\n  return \(%total\)\n$", text)


def test_code_prints_if_else_for_and_while():
    code = jit.script(optional_add).code
    assert "if torch.__isnot__(y, None):" in code and "else:" in code
    assert "unchecked_cast(Tensor, y)" in code
    assert "for " in jit.script(rnn).code and " in range(" in jit.script(rnn).code
    assert "while " in jit.script(while_break_continue).code


def test_passes_keep_the_nodes_with_blocks():
    s = jit.script(while_break_continue)
    g = passes.copy_graph(s.graph)
    passes.propagate_constants(g)
    passes.eliminate_common_subexpression(g)
    passes.peephole(g)
    passes.eliminate_dead_code(g)
    assert kinds(g).count("prim::Loop") == 1 and kinds(g).count("prim::If") == 2
    from pytorchlite.jit._interpreter import Interpreter
    for n in (0, 7, 30):
        assert Interpreter(g).run(n) == while_break_continue(n)


# ---- modules ------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self, sizes, p=0.25):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
        self.drop = nn.Dropout(p)
        self.norm = nn.LayerNorm(sizes[-1])
        self.scale = 2.0

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        if self.training:
            x = x * self.scale
        return self.norm(self.drop(x))


class RNN(nn.Module):
    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.ih = nn.Linear(n_in, n_hidden)
        self.hh = nn.Linear(n_hidden, n_hidden, bias=False)
        self.hidden = n_hidden

    def forward(self, x, h: Optional[ptl.Tensor] = None):
        if h is None:
            h = ptl.zeros(x.size(1), self.hidden, dtype=x.dtype)
        outs = []
        for t in range(x.size(0)):
            h = ptl.tanh(self.ih(x[t]) + self.hh(h))
            outs.append(h)
        return ptl.stack(outs), h


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4, padding_idx=0)
        self.conv = nn.Conv2d(4, 3, 3, padding=1)
        self.seq = nn.Sequential(nn.Tanh(), nn.ReLU())

    def forward(self, idx):
        e = self.emb(idx)                       # [B, H, W, 4]
        y = self.conv(e.permute(0, 3, 1, 2))
        return self.seq(y)


def test_mlp_with_module_list_matches_eager_in_eval_and_train():
    ptl.manual_seed(0)
    m = MLP([3, 5, 4]).double()
    s = jit.script(m)
    assert sorted(s.state_dict()) == sorted(m.state_dict())
    assert kinds(s.graph).count("prim::CallMethod") == 4
    assert isinstance(s.layers[0], jit.RecursiveScriptModule)
    x = rand(6, 3, seed=11)
    for mode in ("eval", "train"):
        getattr(m, mode)()
        getattr(s, mode)()
        ptl.manual_seed(5)
        want = m(x)
        ptl.manual_seed(5)
        got = s(x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    assert s.drop.training and not s.eval().drop.training


def test_gradients_through_scripted_code_equal_eager():
    ptl.manual_seed(1)
    m = RNN(3, 4).double()
    s = jit.script(m)
    x = rand(5, 2, 3, seed=12)
    outs_s, h_s = s(x)
    outs_e, h_e = m(x)
    np.testing.assert_allclose(outs_s.detach().numpy(), outs_e.detach().numpy(), rtol=1e-12)
    (outs_s.sum() + h_s.sum()).backward()
    got = {k: p.grad.numpy().copy() for k, p in m.named_parameters()}
    m.zero_grad()
    (outs_e.sum() + h_e.sum()).backward()
    for k, p in m.named_parameters():
        np.testing.assert_allclose(got[k], p.grad.numpy(), rtol=1e-10)


def test_gradcheck_through_a_scripted_loop():
    s = jit.script(rnn)
    gen = np.random.default_rng(13)
    args = [ptl.from_numpy(gen.standard_normal(shape)).requires_grad_()
            for shape in ((4, 2, 3), (2, 3), (3, 3), (3, 3))]
    assert gradcheck(lambda *a: s(*a), args)
    assert gradcheck(lambda x, h, a, b: s(x, h, a, b).sum(), args)


def test_embedding_conv_and_sequential():
    ptl.manual_seed(2)
    m = Layers()
    s = jit.script(m)
    idx = ptl.from_numpy(np.random.default_rng(14).integers(0, 10, (2, 5, 5)))
    np.testing.assert_allclose(s(idx).detach().numpy(), m(idx).detach().numpy(), rtol=1e-6)
    assert "aten::convolution" in kinds(s.conv.graph)
    assert "aten::embedding" in kinds(s.emb.graph)


def test_inlined_graph_has_no_calls():
    s = jit.script(MLP([3, 4]))
    inlined = kinds(s.inlined_graph)
    assert "prim::CallMethod" not in inlined and "aten::native_layer_norm" in inlined
    assert "prim::CallMethod" in kinds(s.graph)
    assert '(getattr(self.layers, "0")).forward(x)' in s.code


# ---- save / load --------------------------------------------------------------------------

def test_save_load_round_trip_in_a_fresh_process(tmp_path):
    ptl.manual_seed(3)
    m = RNN(3, 4).double().eval()
    s = jit.script(m)
    path = tmp_path / "rnn.pt"
    s.save(str(path))
    x = np.random.default_rng(15).standard_normal((4, 2, 3))
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np, pytorchlite as ptl\n"
            f"m = ptl.jit.load({str(path)!r})\n"
            f"outs, h = m(ptl.from_numpy(np.load({str(tmp_path / 'x.npy')!r})))\n"
            f"np.save({str(tmp_path / 'y.npy')!r}, outs.detach().numpy())\n"
            "print(sorted(m.state_dict()), m.hidden)\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), check=True).stdout
    assert out.strip() == f"{sorted(m.state_dict())} 4"
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"),
                               m(ptl.from_numpy(x))[0].detach().numpy(), rtol=1e-12)


def test_loaded_module_and_function_keep_control_flow(tmp_path):
    ptl.manual_seed(4)
    m = MLP([3, 4]).double()
    buf = io.BytesIO()
    jit.save(jit.script(m), buf)
    buf.seek(0)
    loaded = jit.load(buf)
    x = rand(2, 3, seed=16)
    for mode in ("train", "eval"):
        getattr(m, mode)()
        getattr(loaded, mode)()
        ptl.manual_seed(9)
        want = m(x)
        ptl.manual_seed(9)
        np.testing.assert_allclose(loaded(x).detach().numpy(), want.detach().numpy(),
                                   rtol=1e-12)
    path = tmp_path / "f.pt"
    jit.save(jit.script(while_break_continue), str(path))
    f = jit.load(str(path))
    assert [f(n) for n in range(12)] == [while_break_continue(n) for n in range(12)]
    with zipfile.ZipFile(path) as zf:
        text = zf.read("archive/graph.txt").decode()
    assert "prim::Loop" in text and "aten::remainder.int" in text


def _rewrite(src, dst, fn):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith("graph.txt"):
                data = fn(data.decode()).encode()
            zout.writestr(item, data)


@pytest.mark.parametrize("edit,msg", [
    (lambda t: re.sub(r"\n *block1\(\):\n *-> \(%[\w.]+\)", "", t, count=1),
     r"expected 'block1\(...\):'"),
    (lambda t: t.replace("-> (%x)", "-> ()"),
     r"block1 of prim::If must take no inputs and return \(Tensor\)"),
    (lambda t: t.replace("prim::If(%3)", "prim::If(%x)"), r"prim::If takes one bool"),
    (lambda t: t.replace("  return (%x.1)", "  return (%x.2)"),
     r"value %x.2 is used before it is defined"),
])
def test_load_checks_blocks(tmp_path, edit, msg):
    src, bad = tmp_path / "f.pt", tmp_path / "bad.pt"
    jit.save(jit.script(optional_add), str(src))
    _rewrite(src, bad, edit)
    with pytest.raises(RuntimeError, match="pytorchlite.jit.load: graph.txt.*" + msg):
        jit.load(str(bad))


# ---- errors -------------------------------------------------------------------------------

def uses_lambda(x):
    f = lambda y: y  # noqa: E731
    return f(x)


def uses_try(x):
    try:
        return x
    except Exception:
        return x


def uses_with(x):
    with ptl.no_grad():
        return x


def uses_global(x):
    global HERE
    return x


def uses_kwargs(x, **kw):
    return x


def uses_builtin(x):
    return os.getcwd(x)


def branch_types(x, c: bool):
    if c:
        y = x
    else:
        y = 1
    return y


def one_branch(x, n: int):
    if n > 0:
        z = x
    return z


def uses_comprehension(x, n: int):
    return [x * i for i in range(n)]


def unknown_name(x):
    return undefined_function(x)  # noqa: F821


def _line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("fn,exc,msg,line_text", [
    (uses_lambda, jit.frontend.UnsupportedNodeError, "Lambda aren't supported", "= lambda"),
    (uses_try, jit.frontend.UnsupportedNodeError, "try blocks aren't supported", "try:"),
    (uses_with, jit.frontend.UnsupportedNodeError, "with statements aren't supported",
     "with ptl"),
    (uses_global, jit.frontend.UnsupportedNodeError, "global variables aren't supported",
     "global HERE"),
    (uses_kwargs, jit.frontend.NotSupportedError, "Compiled functions can't take variable "
     "number of arguments or use keyword-only arguments with defaults", "**kw"),
    (uses_builtin, RuntimeError, "Python builtin <built-in function getcwd> is currently not "
     "supported in Torchscript", "os.getcwd"),
    (branch_types, RuntimeError, "Type mismatch: y is set to type Tensor in the true branch and "
     "type int in the false branch", "if c:"),
    (one_branch, RuntimeError, "z is not defined in the false branch", "if n > 0"),
    (unknown_name, RuntimeError, "undefined value undefined_function", "undefined_function"),
    (uses_comprehension, jit.frontend.UnsupportedNodeError,
     "list comprehensions aren't supported", "return [x"),
])
def test_errors_name_the_construct_file_and_line(fn, exc, msg, line_text):
    with pytest.raises(exc) as info:
        jit.script(fn)
    text = str(info.value)
    assert msg in text
    assert f'File "{HERE}", line {_line_of(fn, line_text)}' in text
    assert re.search(r"\n *~+ <--- HERE", text)


def test_mismatch_is_reported_where_the_value_is_used():
    with pytest.raises(RuntimeError) as info:
        jit.script(branch_types)
    assert f"and was used here:\n  File \"{HERE}\", line {_line_of(branch_types, 'return y')}" \
        in str(info.value)


def test_frontend_errors_are_not_runtime_errors():
    assert issubclass(jit.frontend.UnsupportedNodeError, jit.frontend.NotSupportedError)
    assert not issubclass(jit.frontend.NotSupportedError, RuntimeError)


# ---- against torch.jit.script -------------------------------------------------------------

def _torch_kinds(graph):
    out = []

    def walk(block):
        for n in block.nodes():
            out.append(n.kind())
            for b in n.blocks():
                walk(b)
    walk(graph)
    return out


@torch_ref
@pytest.mark.parametrize("fn", [sign_scale, optional_add, while_break_continue, rnn])
def test_control_flow_nodes_match_torch(fn, tmp_path):
    import importlib.util
    import inspect
    import warnings
    path = tmp_path / "torch_source.py"     # the same source, with torch as ptl
    path.write_text("import torch as ptl\nfrom typing import List, Optional, Tuple\n\n" +
                    inspect.getsource(fn))
    spec = importlib.util.spec_from_file_location("torch_source", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.jit.script(getattr(mod, fn.__name__))
    ours, theirs = kinds(jit.script(fn).graph), _torch_kinds(ref.graph)
    for kind in ("prim::Loop", "aten::Bool", "aten::__isnot__", "prim::unchecked_cast"):
        assert ours.count(kind) == theirs.count(kind), kind
    assert ("prim::If" in ours) == ("prim::If" in theirs)


def _python_activations(x):
    return ptl.nn.functional.softsign(x) + ptl.nn.functional.tanhshrink(x) + \
        ptl.nn.functional.softmin(x, 0)


def test_a_routed_python_function_is_inlined():
    """nn.functional's Python functions are _C._RoutedFunction objects (Note [Torch
    function]): scripting compiles the Python function they wrap."""
    x = ptl.tensor([0.5, -1.0, 2.0])
    np.testing.assert_allclose(ptl.jit.script(_python_activations)(x).numpy(),
                               _python_activations(x).numpy(), rtol=1e-6)
    assert ptl.jit.script(ptl.nn.functional.softsign)(x).tolist() == \
        ptl.nn.functional.softsign(x).tolist()
