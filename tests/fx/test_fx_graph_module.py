"""torch.fx.GraphModule, Interpreter, Transformer, ShapeProp and replace_pattern: the
generated module runs as the original, is printed, pickled and copied as PyTorch's is, and
the graph can be run node by node or rewritten."""
import copy
import pickle

import pytest

import pytorchlite as ptl
from pytorchlite import fx
from pytorchlite.fx.passes.shape_prop import ShapeProp, TensorMetadata
from fx_models import models
from helpers import torch, torch_ref

M = models(ptl)

MLP_STR = (
    "MLP(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n  (act): ReLU()\n"
    "  (fc2): Linear(in_features=8, out_features=3, bias=True)\n)\n\n\n\n"
    "def forward(self, x):\n    fc1 = self.fc1(x);  x = None\n"
    "    act = self.act(fc1);  fc1 = None\n    fc2 = self.fc2(act);  act = None\n"
    "    return fc2\n    \n"
    "# To see more debug info, please use `graph_module.print_readable()`")
OUTER_READABLE = (
    "class Outer(torch.nn.Module):\n    def forward(self, x):\n"
    "        # No stacktrace found for following nodes\n"
    "        inner = self.inner(x);  x = None\n"
    "        neg = torch.neg(inner);  inner = None\n        return neg\n\n"
    "    class inner(torch.nn.Module):\n        def forward(self, x):\n"
    "            # No stacktrace found for following nodes\n"
    "            fc1 = self.fc1(x);  x = None\n            act = self.act(fc1);  fc1 = None\n"
    "            fc2 = self.fc2(act);  act = None\n            return fc2\n")


def nested(t):
    gm = t.fx.symbolic_trace(models(t)["MLP"]())
    g = t.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(t.neg, (g.call_module("inner", (x,)),)))
    return gm, t.fx.GraphModule({"inner": gm}, g, class_name="Outer")


def test_printed_forms(capsys):
    gm, outer = nested(ptl)
    assert str(gm) == MLP_STR
    assert outer.print_readable(print_output=False) == OUTER_READABLE
    assert capsys.readouterr().out == ""
    gm.print_readable()
    assert capsys.readouterr().out.startswith("class MLP(torch.nn.Module):\n")
    x = ptl.randn(2, 4)
    assert ptl.equal(outer(x), -gm(x))


@torch_ref
def test_printed_forms_as_torch():
    gm, outer = nested(torch)
    assert str(gm) == MLP_STR
    assert outer.print_readable(print_output=False) == OUTER_READABLE


def test_each_graph_module_has_its_own_class():
    gm1 = fx.symbolic_trace(lambda x: x + 1)
    gm2 = fx.symbolic_trace(lambda x: x * 3)
    assert type(gm1) is not type(gm2)
    assert type(gm1).__name__ == "<lambda>"
    assert isinstance(gm1, fx.GraphModule) and isinstance(gm1, ptl.nn.Module)
    x = ptl.ones(2)
    assert gm1(x).tolist() == [2.0, 2.0] and gm2(x).tolist() == [3.0, 3.0]


def test_recompile_after_a_change():
    gm = fx.symbolic_trace(lambda x: ptl.relu(x) + 1)
    relu = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target is ptl.relu)
    relu.target = ptl.neg
    assert gm(ptl.ones(1)).item() == 2.0            # the old forward until recompile
    gm.recompile()
    assert gm(ptl.ones(1)).item() == 0.0
    assert "relu = torch.neg(x)" in gm.code


def test_root_dict_and_missing_target():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("sub.w")
    g.output(g.call_function(ptl.mul, (x, w)))
    gm = fx.GraphModule({"sub.w": ptl.full((2,), 3.0)}, g)
    assert sorted(gm.state_dict()) == ["sub.w"]
    assert gm(ptl.ones(2)).tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match=r"^Node sub_w referenced target sub.w but that "
                                           r"target was not provided in ``root``!$"):
        fx.GraphModule({}, g)


def test_pickle_and_deepcopy():
    ptl.manual_seed(0)
    model = M["Ops"]()
    gm = fx.symbolic_trace(model)
    x = ptl.randn(4, 4)
    expected = model(x)
    for other in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
        assert type(other).__name__ == "GraphModule"    # as PyTorch's copies are named
        assert other.code == gm.code
        assert str(other.graph) == str(gm.graph)
        assert other.lin.weight is not gm.lin.weight
        assert ptl.equal(other.lin.weight, gm.lin.weight)
        got = other(x)
        assert all(ptl.equal(a, b) if isinstance(a, ptl.Tensor) else a == b
                   for a, b in zip(got, expected))
    scaled = fx.symbolic_trace(M["Scaled"]())
    again = pickle.loads(pickle.dumps(scaled))
    assert again.code == scaled.code and again(ptl.ones(1), 9.0).item() == 3.0


def test_interpreter_runs_the_graph():
    ptl.manual_seed(0)
    model = M["CNN"]().eval()
    gm = fx.symbolic_trace(model)
    x = ptl.randn(2, 3, 8, 8)
    assert ptl.equal(fx.Interpreter(gm).run(x), model(x))

    class Counting(fx.Interpreter):
        def __init__(self, module):
            super().__init__(module)
            self.ops = []

        def call_function(self, target, args, kwargs):
            self.ops.append(target.__name__)
            return super().call_function(target, args, kwargs)

    c = Counting(gm)
    c.run(x)
    assert c.ops == ["relu", "relu", "add", "relu", "relu", "add", "relu", "flatten"]
    interp = fx.Interpreter(gm, garbage_collect_values=False)
    interp.run(x)
    assert len(interp.env) == len(gm.graph.nodes)


def test_interpreter_errors():
    gm = fx.symbolic_trace(lambda x: x @ x)
    with pytest.raises(RuntimeError) as info:
        fx.Interpreter(gm).run(ptl.ones(2, 3))
    assert str(info.value) == (
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)\n\nWhile executing %matmul : "
        "[num_users=1] = call_function[target=operator.matmul](args = (%x, %x), kwargs = {})\n"
        "Original traceback:\nNone")
    with pytest.raises(RuntimeError, match="^Expected positional argument for parameter x, but "
                                           "one was not passed in!"):
        fx.Interpreter(gm).run()


def test_transformer_rewrites():
    ptl.manual_seed(0)
    model = M["MLP"]()
    gm = fx.symbolic_trace(model)

    class ReluToSigmoid(fx.Transformer):
        def call_module(self, target, args, kwargs):
            if target == "act":
                return ptl.sigmoid(*args)
            return super().call_module(target, args, kwargs)

    new = ReluToSigmoid(gm).transform()
    assert new.code == ("\n\n\ndef forward(self, x):\n    fc1 = self.fc1(x);  x = None\n"
                        "    sigmoid = torch.sigmoid(fc1);  fc1 = None\n"
                        "    fc2 = self.fc2(sigmoid);  sigmoid = None\n    return fc2\n    ")
    x = ptl.randn(3, 4)
    assert ptl.equal(new(x), model.fc2(ptl.sigmoid(model.fc1(x))))
    assert ptl.equal(fx.Transformer(gm).transform()(x), model(x))


def test_shape_prop():
    model = M["MLP"]()
    gm = fx.symbolic_trace(model)
    ShapeProp(gm).propagate(ptl.randn(5, 4))
    metas = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert metas["x"] == TensorMetadata(ptl.Size([5, 4]), ptl.float32, False, (4, 1),
                                        ptl.contiguous_format, False, {})
    assert metas["fc2"].shape == ptl.Size([5, 3]) and metas["fc2"].requires_grad
    assert metas["output"].stride == (3, 1)
    assert all(n.meta["type"] is ptl.Tensor for n in gm.graph.nodes)
    gm = fx.symbolic_trace(lambda x: (x.t(), x.shape[0]))
    ShapeProp(gm).propagate(ptl.randn(2, 3))
    t_meta = next(n for n in gm.graph.nodes if n.name == "t").meta["tensor_meta"]
    assert t_meta.stride == (1, 3) and t_meta.memory_format is None
    getitem = next(n for n in gm.graph.nodes if n.name == "getitem")
    assert "tensor_meta" not in getitem.meta and getitem.meta["type"] is int


@torch_ref
def test_shape_prop_as_torch():
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

    def fields(t, prop, x):
        gm = t.fx.symbolic_trace(models(t)["MLP"]())
        prop(gm).propagate(x)
        return [(n.name, tuple(m.shape), str(m.dtype), m.requires_grad, m.stride,
                 str(m.memory_format)) for n in gm.graph.nodes
                for m in [n.meta["tensor_meta"]]]
    assert fields(ptl, ShapeProp, ptl.randn(5, 4)) == \
        fields(torch, TorchShapeProp, torch.randn(5, 4))


def test_replace_pattern():
    class Model(ptl.nn.Module):
        def forward(self, x, w1, w2):
            m1 = ptl.cat([w1, w2]).sum()
            m2 = ptl.cat([w1, w2]).sum()
            return x + ptl.max(m1) + ptl.max(m2)

    def pattern(w1, w2):
        return ptl.cat([w1, w2]).sum()

    def replacement(w1, w2):
        return ptl.stack([w1, w2])

    gm = fx.symbolic_trace(Model())
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    assert [sorted((k.name, v.name) for k, v in m.nodes_map.items()) for m in matches] == [
        [("cat", "cat"), ("sum_1", "sum_1"), ("w1", "w1"), ("w2", "w2")],
        [("cat", "cat_1"), ("sum_1", "sum_2"), ("w1", "w1"), ("w2", "w2")]]
    assert gm.code == (
        "\n\n\ndef forward(self, x, w1, w2):\n    stack = torch.stack([w1, w2])\n"
        "    max_1 = torch.max(stack);  stack = None\n    add = x + max_1;  x = max_1 = None\n"
        "    stack_1 = torch.stack([w1, w2]);  w1 = w2 = None\n"
        "    max_2 = torch.max(stack_1);  stack_1 = None\n"
        "    add_1 = add + max_2;  add = max_2 = None\n    return add_1\n    ")


def test_replace_pattern_chained_matches():
    def f(x):
        y = ptl.relu(x) * 2
        z = ptl.relu(y)
        return z + ptl.relu(z).sum()
    gm = fx.symbolic_trace(f)
    assert len(fx.replace_pattern(gm, lambda a: ptl.relu(a), lambda a: ptl.sigmoid(a))) == 3
    gm.graph.lint()
    x = ptl.randn(3)
    s = ptl.sigmoid
    expected = s(s(x) * 2) + s(s(s(x) * 2)).sum()
    assert ptl.allclose(gm(x), expected, rtol=0, atol=0)


SHAPED_READABLE = '''class Shaped(torch.nn.Module):
    def forward(self, x: "f32[5, 4]"):
        # No stacktrace found for following nodes
        fc: "f32[5, 3]" = self.fc(x)
        to: "f64[5, 3]" = fc.to(torch.float64);  fc = None
        sum_1: "f64[]" = to.sum()
        getattr_1 = to.shape
        getitem = getattr_1[0];  getattr_1 = None
        int_1: "i32[5, 3]" = to.int();  to = None
        t: "f32[4, 5]" = x.t();  x = None
        return (sum_1, getitem, (int_1, t))
'''


def shaped_readable(t, shape_prop):
    class Shaped(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = t.nn.Linear(4, 3)

        def forward(self, x):
            y = self.fc(x).to(t.float64)
            return y.sum(), y.shape[0], (y.int(), x.t())
    gm = t.fx.symbolic_trace(Shaped())
    shape_prop(gm).propagate(t.ones(5, 4))
    return gm.print_readable(print_output=False)


def test_print_readable_shows_shape_prop_annotations():
    assert shaped_readable(ptl, ShapeProp) == SHAPED_READABLE


@torch_ref
def test_print_readable_annotations_as_torch():
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp
    assert shaped_readable(torch, TorchShapeProp) == SHAPED_READABLE
