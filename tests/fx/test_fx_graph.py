"""torch.fx.Graph and Node: building a graph by hand, names, use lists, rewriting
(replace_all_uses_with, inserting_before/after, erase_node), dead-code elimination, lint,
and the printed forms (PyTorch 2.13's strings)."""
import operator
import re

import pytest

import pytorchlite as ptl
from pytorchlite import fx
from fx_models import models
from helpers import torch, torch_ref

BUILT_GRAPH = """graph():
    %a : [num_users=2] = placeholder[target=a]
    %b : [num_users=1] = placeholder[target=b](default=2)
    %add : [num_users=1] = call_function[target=operator.add](args = (%a, %b), kwargs = {})
    %add_1 : [num_users=1] = call_function[target=torch.add](args = (%add, %a), kwargs = {alpha: 2})
    %sum_1 : [num_users=2] = call_method[target=sum](args = (%add_1,), kwargs = {})
    %scaled : [num_users=1] = call_function[target=torch.mul](args = (%sum_1, 3), kwargs = {})
    return (scaled, [sum_1])"""
BUILT_CODE = """


def forward(self, a, b = 2):
    add = a + b;  b = None
    add_1 = torch.add(add, a, alpha = 2);  add = a = None
    sum_1 = add_1.sum();  add_1 = None
    scaled = torch.mul(sum_1, 3)
    return (scaled, [sum_1])
    """


def build(t):
    g = t.fx.Graph()
    a = g.placeholder("a")
    b = g.placeholder("b", default_value=2)
    s = g.call_function(operator.add, (a, b))
    s2 = g.call_function(t.add, (s, a), {"alpha": 2})
    s3 = g.call_method("sum", (s2,))
    s4 = g.create_node("call_function", t.mul, (s3, 3), name="scaled")
    g.output((s4, [s3]))
    return g


def test_built_graph_prints_and_runs():
    g = build(ptl)
    assert str(g) == BUILT_GRAPH
    gm = fx.GraphModule(ptl.nn.Module(), g)
    assert gm.code == BUILT_CODE
    out = gm(ptl.ones(2), ptl.ones(2))
    assert out[0].item() == 24.0 and out[1][0].item() == 8.0
    assert gm(ptl.ones(2))[1][0].item() == 10.0          # b's default


@torch_ref
def test_built_graph_as_torch():
    g = build(torch)
    assert str(g) == BUILT_GRAPH
    assert torch.fx.GraphModule(torch.nn.Module(), g).code == BUILT_CODE


def test_nodes_uses_and_names():
    g = build(ptl)
    a, b, add, add_1, sum_1, scaled, out = g.nodes
    assert len(g.nodes) == 7
    assert [n.op for n in g.nodes] == ["placeholder", "placeholder", "call_function",
                                       "call_function", "call_method", "call_function",
                                       "output"]
    assert list(a.users) == [add, add_1]
    assert add_1.all_input_nodes == [add, a]
    assert add_1.args == (add, a) and add_1.kwargs == {"alpha": 2}
    assert out.args == ((scaled, [sum_1]),)
    assert sum_1.next is scaled and scaled.prev is sum_1
    assert [n.name for n in reversed(g.nodes)][:2] == ["output", "scaled"]
    assert repr(add) == "add" and add.target is operator.add
    # names are unique, and shadow no builtin
    assert g.call_function(ptl.add, (a, a)).name == "add_2"
    assert g.call_method("max", (a,)).name == "max_1"
    assert g.call_function(getattr, (a, "shape")).name == "getattr_1"
    assert g.get_attr("layer.0.weight").name == "layer_0_weight"
    assert g.placeholder("CamelCase").name == "camel_case"
    assert g.find_nodes(op="call_method") == [sum_1, g.find_nodes(op="call_method")[1]]


def test_replace_erase_and_insert():
    g = build(ptl)
    a, b, add, add_1, sum_1, scaled, out = g.nodes
    with g.inserting_after(add):
        neg = g.call_function(ptl.neg, (add,))
    assert neg.prev is add and neg.next is add_1
    changed = add.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)
    assert changed == [add_1] and list(add.users) == [neg]
    with pytest.raises(RuntimeError, match=r"^Tried to erase Node add but it still had 1 users "
                                           r"in the graph: \{neg: None\}!$"):
        g.erase_node(add)
    with g.inserting_before(add):
        first = g.call_function(ptl.abs, (a,))
    assert first.next is add
    neg.replace_input_with(add, first)
    g.erase_node(add)
    assert add not in list(g.nodes) and a.users == {add_1: None, first: None}
    g.lint()
    gm = fx.GraphModule(ptl.nn.Module(), g)
    x = ptl.tensor([-1.0, 2.0])
    assert gm(x, x)[0].tolist() == ((-x.abs() + 2 * x).sum() * 3).reshape(()).tolist()


def test_eliminate_dead_code_keeps_side_effects():
    g = build(ptl)
    a = next(iter(g.nodes))
    out = list(g.nodes)[-1]
    with g.inserting_before(out):
        dead = g.call_function(ptl.neg, (a,))
        g.call_function(ptl.relu, (dead,))
        check = g.call_function(ptl._assert, (True, "kept"))
    assert g.eliminate_dead_code() is True
    assert [n.name for n in g.nodes] == ["a", "b", "add", "add_1", "sum_1", "scaled",
                                         "_assert", "output"]
    assert check in list(g.nodes)
    assert g.eliminate_dead_code() is False

    @fx.has_side_effect
    def log(x):
        return None
    with g.inserting_before(out):
        g.call_function(log, (a,))
    assert g.eliminate_dead_code() is False


def test_dead_code_of_a_traced_module():
    class M(ptl.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ptl.nn.Linear(2, 2)

        def forward(self, x):
            unused = self.lin(x) * 2
            return x + 1
    gm = fx.symbolic_trace(M())
    assert gm.graph.eliminate_dead_code()
    gm.recompile()
    assert gm.code == \
        "\n\n\ndef forward(self, x):\n    add = x + 1;  x = None\n    return add\n    "


def test_lint_finds_broken_graphs():
    g = build(ptl)
    a, b, add = list(g.nodes)[:3]
    add._prev._next = add._next                   # unlink add behind the graph's back
    add._next._prev = add._prev
    with pytest.raises(RuntimeError, match="Argument 'add' of Node 'add_1' was used before "
                                           "it has been defined!"):
        g.lint()
    gm = fx.symbolic_trace(models(ptl)["MLP"]())
    del gm.fc1
    with pytest.raises(RuntimeError, match="references nonexistent attribute fc1 of root"):
        gm.graph.lint()


def test_node_checks_its_target():
    g = fx.Graph()
    with pytest.raises(ValueError, match="but a Callable is expected"):
        g.create_node("call_function", "relu")
    with pytest.raises(ValueError, match="but a str is expected"):
        g.create_node("call_module", ptl.relu)


def test_print_tabular_needs_tabulate(capsys):
    try:
        import tabulate  # noqa: F401
        pytest.skip("tabulate is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError):
        build(ptl).print_tabular()
    assert capsys.readouterr().out == (
        "`print_tabular` relies on the library `tabulate`, which could not be found on this "
        "machine. Run `pip install tabulate` to install the library.\n")


BUILT_TABLE = """\
opcode         name    target                   args                  kwargs
-------------  ------  -----------------------  --------------------  ------------
placeholder    a       a                        ()                    {}
placeholder    b       b                        (2,)                  {}
call_function  add     <built-in function add>  (a, b)                {}
call_function  add_1   <built-in function add>  (add, a)              {'alpha': 2}
call_method    sum_1   sum                      (add_1,)              {}
call_function  scaled  <built-in function mul>  (sum_1, 3)            {}
output         output  output                   ((scaled, [sum_1]),)  {}
"""


def test_print_tabular_prints_the_nodes(capsys):
    pytest.importorskip("tabulate")
    build(ptl).print_tabular()
    assert capsys.readouterr().out == BUILT_TABLE


@torch_ref
def test_print_tabular_as_pytorch(capsys):
    pytest.importorskip("tabulate")
    build(torch).print_tabular()
    theirs = capsys.readouterr().out
    # torch.add is a method of torch's _VariableFunctions class, ours a module function: the
    # target column names them differently (and is as wide as the longest name); every other
    # cell is the same.
    theirs = re.sub(r"<built-in method (\w+) of type object at 0x[0-9a-f]+>",
                    r"<built-in function \1>", theirs)

    def cells(table):
        return [re.split(r"  +", line.strip()) for line in table.splitlines()
                if not line.startswith("-")]
    assert cells(theirs) == cells(BUILT_TABLE)


def test_rewrite_relu_to_gelu():
    ptl.manual_seed(0)
    model = models(ptl)["CNN"]().eval()
    gm = fx.symbolic_trace(model)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is ptl.relu:
            with gm.graph.inserting_after(node):
                new = gm.graph.call_function(ptl.nn.functional.gelu, node.args, node.kwargs)
            node.replace_all_uses_with(new)
            gm.graph.erase_node(node)
    gm.graph.lint()
    gm.recompile()
    assert "relu" not in gm.code
    assert "gelu_2 = torch._C._nn.gelu(add);  add = None" in gm.code   # as PyTorch prints it

    def reference(x):
        g = ptl.nn.functional.gelu
        x = g(model.stem(x))
        for block in model.layer:
            out = g(block.bn1(block.conv1(x)))
            x = g(block.bn2(block.conv2(out)) + x)
        return model.fc(ptl.flatten(model.pool(x), 1))
    x = ptl.randn(2, 3, 8, 8)
    assert ptl.allclose(gm(x), reference(x), rtol=0, atol=0)


def test_graph_deepcopy():
    import copy
    g = build(ptl)
    g2 = copy.deepcopy(g)
    assert str(g2) == str(g)
    assert all(n.graph is g2 for n in g2.nodes)
    assert not set(g2.nodes) & set(g.nodes)
