"""jit.script's raise and assert (prim::RaiseException, an If whose branch raises returning
prim::Uninitialized) against eager Python, their graphs against TorchScript's, save/load and
the executor's refusal of graphs with blocks; jit.freeze and optimize_for_inference of
scripted modules: attributes become constants, the Ifs they decide fold, the Loops and Ifs on
inputs stay with frozen blocks, and elementwise chains fuse."""
import inspect
import os
import re
from typing import Dict, List

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import jit, nn
from helpers import graph_kinds as kinds, torch, torch_ref

HERE = os.path.abspath(__file__)


def rand(*shape, seed=0):
    return ptl.from_numpy(np.random.default_rng(seed).standard_normal(shape))


# ---- functions scripted by the tests --------------------------------------------------------

def checked_scale(x, n: int):
    if n < 0:
        raise ValueError("n must be non-negative")
    elif n == 0:
        raise RuntimeError
    else:
        y = x * n
    assert n < 10
    assert n != 5, "five is not allowed"
    return y


def raise_in_loop(x, n: int):
    for i in range(n):
        if i > 3:
            raise IndexError("too many steps")
        x = x + 1
    return x


def raise_with_a_str_value(x, msg: str):
    if x.sum() > 0:
        raise TypeError(msg)
    assert x.sum() < -1, msg
    return x


def early_return_or_raise(x, k: int):
    if k > 0:
        return x + k
    raise ValueError("k must be positive")


def assert_on_a_list(x, sizes: List[int]):
    assert len(sizes) == x.dim(), "one size per dimension"
    return x.reshape(sizes)


def _eager_error(fn, *args):
    with pytest.raises(Exception) as info:
        fn(*args)
    return info.value


def _message(exc):
    """The last line of a TorchScript error: `<exception name>: <message>`."""
    return str(exc).rstrip("\n").rsplit("\n", 1)[-1]


@pytest.mark.parametrize("n", [-3, 0, 1, 4, 5, 9, 10])
def test_raise_and_assert_match_eager(n):
    s = jit.script(checked_scale)
    x = rand(2, 3)
    try:
        want = checked_scale(x, n)
    except Exception as e:   # noqa: BLE001  (each exception kind is compared below)
        with pytest.raises(jit.Error) as info:
            s(x, n)
        name = {ValueError: "builtins.ValueError", RuntimeError: "RuntimeError",
                AssertionError: "RuntimeError"}[type(e)]
        # pytest rewrites this module's asserts, so the eager messages are written out here
        text = str(e) if not isinstance(e, AssertionError) else \
            "AssertionError: " + {5: "five is not allowed", 10: ""}[n]
        assert _message(info.value) == f"{name}: {text}"
        assert str(info.value).startswith("The following operation failed in the "
                                          "TorchScript interpreter.\nTraceback of TorchScript")
        assert f'File "{HERE}"' in str(info.value)
        return
    np.testing.assert_array_equal(s(x, n).numpy(), want.numpy())


def test_raise_inside_a_loop_and_with_a_message_value():
    s = jit.script(raise_in_loop)
    x = rand(4)
    for n in (0, 3, 4):
        np.testing.assert_array_equal(s(x, n).numpy(), raise_in_loop(x, n).numpy())
    with pytest.raises(jit.Error, match="builtins.IndexError: too many steps\n$"):
        s(x, 6)
    t = jit.script(raise_with_a_str_value)
    with pytest.raises(jit.Error, match="builtins.TypeError: positive sum\n$"):
        t(ptl.ones(3), "positive sum")
    with pytest.raises(jit.Error, match="RuntimeError: AssertionError: sum too big\n$"):
        t(-ptl.ones(1) / 2, "sum too big")
    np.testing.assert_array_equal(t(-ptl.ones(3), "m").numpy(), -np.ones(3))
    assert "aten::add" in kinds(t.graph)   # "AssertionError: " + msg at run time


def test_a_branch_that_raises_gives_its_values_from_the_other():
    s = jit.script(early_return_or_raise)
    x = rand(3)
    np.testing.assert_array_equal(s(x, 2).numpy(), (x + 2).numpy())
    with pytest.raises(jit.Error, match="builtins.ValueError: k must be positive"):
        s(x, 0)
    ks = kinds(jit.script(checked_scale).graph)
    assert ks.count("prim::RaiseException") == 4
    assert ks.count("prim::Uninitialized") == 2   # y from the two raising branches
    a = jit.script(assert_on_a_list)
    assert a(rand(2, 3), [3, 2]).shape == (3, 2)
    with pytest.raises(jit.Error, match="AssertionError: one size per dimension"):
        a(rand(6), [2, 3])


def test_graph_with_raise_saves_loads_and_runs_in_python_steps(tmp_path):
    s = jit.script(checked_scale)
    text = str(s.graph)
    assert re.search(r"\n +  = prim::RaiseException\(%\w+, %\w+\)\n", text)
    assert re.search(r"%\w+ : Tensor = prim::Uninitialized\(\)", text)
    path = str(tmp_path / "f.pt")
    jit.save(s, path)
    loaded = jit.load(path)
    assert kinds(loaded.graph) == kinds(s.graph)
    x = rand(3)
    np.testing.assert_array_equal(loaded(x, 3).numpy(), (x * 3).numpy())
    with pytest.raises(jit.Error, match="RuntimeError: AssertionError: five is not allowed"):
        loaded(x, 5)
    assert s._interp.program is None   # blocks: the C executor refuses, Python steps run
    with pytest.raises(RuntimeError, match="cannot lower prim::If, a node with blocks"):
        jit._interpreter.lower(s.graph)


def bad_raise_from(x):
    try_value = x
    raise ValueError("a") from None
    return try_value


def bad_bare_raise(x):
    raise


def bad_raise_two_args(x):
    raise ValueError("a", "b")


def bad_raise_not_an_exception(x):
    raise len


def bad_assert_message(x):
    assert x.sum() > 0, 3
    return x


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


@pytest.mark.parametrize("fn,exc,msg,line_text", [
    (bad_raise_from, jit.frontend.NotSupportedError, "raise ... from ... isn't supported",
     "from None"),
    (bad_bare_raise, jit.frontend.NotSupportedError, "bare raise statements aren't supported",
     "    raise\n"),
    (bad_raise_two_args, jit.frontend.NotSupportedError,
     "an exception takes at most one argument, its message", 'ValueError("a", "b")'),
    (bad_raise_not_an_exception, RuntimeError, "exceptions must derive from BaseException",
     "raise len"),
    (bad_assert_message, RuntimeError, "an exception message must be a str, not int",
     "assert x.sum"),
])
def test_unsupported_raise_forms_name_file_and_line(fn, exc, msg, line_text):
    with pytest.raises(exc) as info:
        jit.script(fn)
    assert msg in str(info.value)
    assert f'File "{HERE}", line {_line_of(fn, line_text)}' in str(info.value)


def _torchscript_graph(fn, tmp_path):
    """torch.jit.script's graph of fn's source, with torch imported as ptl."""
    import importlib.util
    path = tmp_path / "torch_source.py"
    path.write_text("import torch as ptl\nfrom typing import Dict, List\n\n" +
                    inspect.getsource(fn))
    spec = importlib.util.spec_from_file_location("torch_source", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return torch.jit.script(getattr(mod, fn.__name__)).graph


@torch_ref
@pytest.mark.parametrize("fn", [checked_scale, raise_in_loop, raise_with_a_str_value])
def test_raise_nodes_match_torchscript(fn, tmp_path):
    ref = _torchscript_graph(fn, tmp_path)
    theirs = []

    def walk(block):
        for n in block.nodes():
            theirs.append(n.kind())
            for b in n.blocks():
                walk(b)
    walk(ref)
    ours = kinds(jit.script(fn).graph)
    for kind in ("prim::RaiseException", "prim::If", "prim::Loop"):
        assert ours.count(kind) == theirs.count(kind), kind
    # TorchScript pools its constants: one prim::Uninitialized per type, where each raising
    # block here makes its own
    assert ("prim::Uninitialized" in ours) == ("prim::Uninitialized" in theirs)
    strings = sorted(n.s("value") for n in ref.findAllNodes("prim::Constant")
                     if n.output().type().kind() == "StringType")
    mine = sorted(n.attrs["value"] for n in jit.script(fn).graph.nodes
                  if n.kind == "prim::Constant" and isinstance(n.attrs.get("value"), str))

    def inner_strings(nodes):
        for n in nodes:
            if n.kind == "prim::Constant" and isinstance(n.attrs.get("value"), str):
                yield n.attrs["value"]
            for b in n.blocks:
                yield from inner_strings(b.nodes)
    mine = sorted(set(inner_strings(jit.script(fn).graph.nodes)))
    assert mine == sorted(set(strings))


# ---- freezing scripted modules --------------------------------------------------------------

class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = 2.0
        self.use_relu = True
        self.register_buffer("shift", ptl.full((3,), 0.25, dtype=ptl.float64))

    def forward(self, x, n: int):
        y = self.fc(x)
        if self.use_relu:
            y = y.relu()
        if self.training:
            y = y * 0.5
        for i in range(n):
            if y.sum() > 0:
                y = y - self.shift
            else:
                y = y * self.scale
        assert n >= 0, "n must be non-negative"
        return ((y * 2 + 1).relu() - 0.5).exp().sigmoid()


def _gated():
    ptl.manual_seed(0)
    return Gated().double().eval()


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("shape", [(5, 4), (0, 4), (4,)])
def test_frozen_scripted_module_matches_eager(n, shape):
    model = _gated()
    scripted = jit.script(model)
    frozen = jit.freeze(scripted)
    x = rand(*shape, seed=n)
    with ptl.no_grad():
        np.testing.assert_array_equal(frozen(x, n).numpy(), model(x, n).numpy())
    ks = kinds(frozen.graph)
    assert "prim::GetAttr" not in ks and "prim::CallMethod" not in ks
    # self.use_relu and self.training fold; y.sum() > 0 (in the loop) and the assert stay
    assert kinds(scripted.graph).count("prim::If") == 4
    assert ks.count("prim::If") == 2
    assert ks.count("prim::Loop") == 1
    assert list(frozen.state_dict()) == []
    with pytest.raises(jit.Error, match="AssertionError: n must be non-negative"):
        frozen(x, -1)


def test_frozen_scripted_module_keeps_constant_copies():
    model = _gated()
    frozen = jit.freeze(jit.script(model))
    x = rand(2, 4)
    before = frozen(x, 2)
    with ptl.no_grad():
        model.fc.weight.add_(1.0)
    np.testing.assert_array_equal(frozen(x, 2).numpy(), before.numpy())


def test_freeze_of_a_scripted_module_in_training_mode_raises():
    with pytest.raises(RuntimeError, match=r"^Freezing is currently only implemented for "
                                           r"modules in eval mode"):
        jit.freeze(jit.script(Gated()))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("shape", [(), (0,), (3, 1000), (70000,)])
def test_optimize_for_inference_fuses_a_scripted_chain(dtype, shape):
    model = _gated().to(dtype)
    opt = jit.optimize_for_inference(jit.script(model))
    assert "prim::FusionGroup" in kinds(opt.graph)
    x = ptl.tensor(np.random.default_rng(2).standard_normal(shape + (4,)), dtype=dtype)
    with ptl.no_grad():
        want = model(x, 2)
        got = opt(x, 2)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    xt = ptl.tensor(np.random.default_rng(3).standard_normal((4, 6)), dtype=dtype).t()
    with ptl.no_grad():   # non-contiguous: the group's subgraph runs
        np.testing.assert_array_equal(opt(xt, 1).numpy(), model(xt, 1).numpy())


def test_fold_constant_ifs_runs_the_taken_block():
    def fn(x, flag: bool):
        if flag:
            y = x + 1
        else:
            y = x - 1
        return y * 2

    g = jit.script(fn).graph
    node = next(n for n in g.nodes if n.kind == "prim::If")
    c = jit._ir.Node("prim::Constant", [], [jit._ir.Value("bool")], attrs={"value": False})
    g.nodes.insert(g.nodes.index(node), c)   # a constant for the flag, as freezing makes
    node.inputs = [c.outputs[0]]
    jit.passes.fold_constant_ifs(g)
    assert "prim::If" not in kinds(g)
    x = rand(3)
    np.testing.assert_array_equal(jit._interpreter.Interpreter(g).run(x, True).numpy(),
                                  ((x - 1) * 2).numpy())


# ---- Dict[str, T] and Dict[int, T] ----------------------------------------------------------

def dict_counts(x, keys: List[str]):
    d: Dict[str, int] = {"a": 1, "b": 2}
    d["c"] = 3
    total = 0
    for k in d.keys():
        total += d[k]
    for k, v in d.items():
        total += v
    for k in d:
        total += 1
    if "a" in d:
        total += len(d)
    if "q" not in d:
        total += 100
    for k in keys:
        if k in d:
            total += d[k]
    return x + total + d.get("z", 7)


def dict_of_tensors(x, scale: Dict[int, float]):
    out: Dict[int, ptl.Tensor] = {}
    for i, s in scale.items():
        out[i] = x * s
    y = ptl.zeros_like(x)
    for v in out.values():
        y = y + v
    missing = out.get(-1)
    if missing is None:
        y = y + 1
    return y, out


def dict_literal_of_tensors(x):
    d = {"double": x * 2, "neg": -x}
    return d["double"] + d["neg"]


def dict_missing_key(x, key: str):
    d = {"a": x}
    return d[key]


@pytest.mark.parametrize("keys", [[], ["a", "zz", "c"], ["c", "c"]])
def test_dict_of_str_matches_eager(keys):
    s = jit.script(dict_counts)
    x = rand(3)
    np.testing.assert_array_equal(s(x, keys).numpy(), dict_counts(x, keys).numpy())


@pytest.mark.parametrize("shape", [(), (0,), (2, 3)])
def test_dict_of_int_to_tensor_matches_eager(shape):
    s = jit.script(dict_of_tensors)
    x = rand(*shape)
    scale = {2: 0.5, 3: -2.0, 7: 1.5}
    y, out = s(x, scale)
    y_ref, out_ref = dict_of_tensors(x, scale)
    np.testing.assert_array_equal(y.numpy(), y_ref.numpy())
    assert list(out) == list(out_ref)
    for k in out:
        np.testing.assert_array_equal(out[k].numpy(), out_ref[k].numpy())
    t = jit.script(dict_literal_of_tensors)
    np.testing.assert_array_equal(t(x).numpy(), dict_literal_of_tensors(x).numpy())
    assert s.graph.inputs[1].type == "Dict(int, float)"
    assert "scale: Dict[int, float]) -> Tuple[Tensor, Dict[int, Tensor]]:" in s.code
    assert "prim::DictConstruct" in kinds(s.graph)


def test_dict_errors_and_missing_keys():
    s = jit.script(dict_missing_key)
    with pytest.raises(KeyError):
        s(rand(2), "b")
    with pytest.raises(RuntimeError, match=r"Expected a value of type 'Dict\[int, float\]' for "
                                           r"argument 'scale'"):
        jit.script(dict_of_tensors)(rand(2), {"a": 1.0})


def dict_empty_literal(x):
    d = {}
    return x


def dict_mixed_keys(x):
    d = {"a": 1, 2: 3}
    return x


def dict_wrong_key(x):
    d = {"a": x}
    return d[0]


def dict_float_keys(x, d: Dict[float, int]):
    return x


@pytest.mark.parametrize("fn,msg,line_text", [
    (dict_empty_literal, "an empty dict literal needs a type", "d = {}"),
    (dict_mixed_keys, "Dict keys must all be str or all be int, got str, int", "d = {"),
    (dict_wrong_key, "a Dict[str, Tensor] is indexed by str, not int", "d[0]"),
])
def test_dict_compile_errors_name_file_and_line(fn, msg, line_text):
    with pytest.raises(RuntimeError) as info:
        jit.script(fn)
    assert msg in str(info.value)
    assert f'File "{HERE}", line {_line_of(fn, line_text)}' in str(info.value)
    with pytest.raises(RuntimeError, match="Dict keys must be str or int, not float"):
        jit.script(dict_float_keys)


def test_dict_graph_saves_loads_and_runs_in_python_steps(tmp_path):
    s = jit.script(dict_counts)
    path = str(tmp_path / "d.pt")
    jit.save(s, path)
    loaded = jit.load(path)
    assert kinds(loaded.graph) == kinds(s.graph)
    x = rand(2)
    np.testing.assert_array_equal(loaded(x, ["b"]).numpy(), dict_counts(x, ["b"]).numpy())
    with pytest.raises(RuntimeError, match="cannot lower"):
        jit._interpreter.lower(jit.script(dict_literal_of_tensors).graph)
    t = jit.script(dict_literal_of_tensors)
    np.testing.assert_array_equal(t(x).numpy(), (x * 2 - x).numpy())
    assert t._interp.program is None   # prim::DictConstruct: the Python steps run it


@torch_ref
@pytest.mark.parametrize("fn", [dict_counts, dict_of_tensors])
def test_dict_nodes_match_torchscript(fn, tmp_path):
    ref = _torchscript_graph(fn, tmp_path)
    theirs = []

    def walk(block):
        for n in block.nodes():
            theirs.append((n.kind(), [o.type().str() for o in n.outputs()]))
            for b in n.blocks():
                walk(b)
    walk(ref)
    ours = []

    def walk_ours(nodes):
        for n in nodes:
            ours.append((n.kind, [o.type for o in n.outputs]))
            for b in n.blocks:
                walk_ours(b.nodes)
    walk_ours(jit.script(fn).graph.nodes)
    for kind in ("prim::DictConstruct", "aten::_set_item", "aten::__contains__", "aten::keys",
                 "aten::items", "aten::values", "aten::get", "prim::Loop"):
        assert sorted(t for k, t in ours if k == kind) == \
            sorted(t for k, t in theirs if k == kind), kind


# ---- return inside a loop (Note [Return inside a loop]) -------------------------------------

def return_from_for(x, n: int):
    for i in range(n):
        if i == 3:
            return x + i
    return x


def return_from_list_loop(xs: List[float]) -> float:
    total = 0.0
    for v in xs:
        total += v
        if v < 0:
            return v * 2
    return total


def return_from_while(x, n: int):
    k = 0
    while k < n:
        x = x * 2
        if x.sum() > 100:
            return x
        k += 1
    y = x - 1
    return y


def return_in_nested_loop(x, n: int):
    for i in range(n):
        for j in range(n):
            if i + j > 3:
                return x
    return x


def return_types_differ(x, n: int):
    for i in range(n):
        if i > 2:
            return i
    return x


def loop_returns_differ(x, n: int):
    for i in range(n):
        if i > 2:
            return i
        if i > 1:
            return x
    return x


@pytest.mark.parametrize("n", [0, 2, 4, 9])
@pytest.mark.parametrize("shape", [(), (0,), (3,)])
def test_return_inside_loops_matches_eager(n, shape):
    x = rand(*shape, seed=n).abs() + 0.5
    for fn in (return_from_for, return_from_while):
        np.testing.assert_array_equal(jit.script(fn)(x, n).numpy(), fn(x, n).numpy())
    s = jit.script(return_from_list_loop)
    for xs in ([], [1.0, 2.0], [1.0, -3.0, 4.0], [-1.0]):
        assert s(xs) == return_from_list_loop(xs)


def test_a_loop_that_returns_carries_a_flag_and_the_result(tmp_path):
    g = jit.script(return_from_for).graph
    loop = next(n for n in g.nodes if n.kind == "prim::Loop")
    assert [o.type for o in loop.outputs] == ["bool", "Tensor"]
    assert g.nodes[-1].kind == "prim::If" and g.nodes[-1].inputs[0] is loop.outputs[0]
    path = str(tmp_path / "r.pt")
    jit.save(jit.script(return_from_while), path)
    loaded = jit.load(path)
    x = ptl.ones(3)
    np.testing.assert_array_equal(loaded(x, 10).numpy(), return_from_while(x, 10).numpy())


def test_return_inside_loops_errors():
    with pytest.raises(jit.frontend.NotSupportedError) as info:
        jit.script(return_in_nested_loop)
    assert "return statements inside nested loops aren't supported" in str(info.value)
    assert f'line {_line_of(return_in_nested_loop, "                return x")}' in \
        str(info.value)
    with pytest.raises(RuntimeError, match="Previous return statement returned a value of type "
                                           "int but this return statement returns a value of "
                                           "type Tensor"):
        jit.script(loop_returns_differ)
    with pytest.raises(RuntimeError, match="Type mismatch: the true branch gives int and the "
                                           "false branch Tensor"):
        jit.script(return_types_differ)


@torch_ref
@pytest.mark.parametrize("fn", [return_from_for, return_from_list_loop, return_from_while])
def test_loop_return_nodes_match_torchscript(fn, tmp_path):
    ref = _torchscript_graph(fn, tmp_path)
    loops = [n for n in ref.findAllNodes("prim::Loop")]
    ours = [n for n in jit.script(fn).graph.nodes if n.kind == "prim::Loop"]
    assert len(loops) == len(ours) == 1
    theirs = [o.type().str() for o in loops[0].outputs()]
    mine = [o.type for o in ours[0].outputs]
    # both carry the flag and the result; TorchScript also carries a range loop's index
    assert mine[-2:] == ["bool", jit.script(fn).graph.outputs[0].type]
    assert all(theirs.count(t) >= mine.count(t) for t in mine)
