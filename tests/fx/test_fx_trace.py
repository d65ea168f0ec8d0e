"""torch.fx.symbolic_trace and Tracer: the graphs and generated code of MLP, CNN (a residual
block), operators/methods/functions, concrete_args, leaf modules, wrap, and the errors of
control flow on a Proxy.  The expected strings are PyTorch 2.13's for the same models
(fx_models.py); the torch_ref tests compare with a live PyTorch."""
import math
import subprocess
import sys

import pytest

import pytorchlite as ptl
from pytorchlite import fx
from fx_models import models
from helpers import ROOT, torch, torch_ref

M = models(ptl)

MLP_GRAPH = """graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %act : [num_users=1] = call_module[target=act](args = (%fc1,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%act,), kwargs = {})
    return fc2"""
MLP_CODE = ("\n\n\ndef forward(self, x):\n    fc1 = self.fc1(x);  x = None\n"
            "    act = self.act(fc1);  fc1 = None\n    fc2 = self.fc2(act);  act = None\n"
            "    return fc2\n    ")

CNN_GRAPH = """graph():
    %x : [num_users=1] = placeholder[target=x]
    %stem : [num_users=1] = call_module[target=stem](args = (%x,), kwargs = {})
    %relu : [num_users=2] = call_function[target=torch.relu](args = (%stem,), kwargs = {})
    %layer_0_conv1 : [num_users=1] = call_module[target=layer.0.conv1](args = (%relu,), kwargs = {})
    %layer_0_bn1 : [num_users=1] = call_module[target=layer.0.bn1](args = (%layer_0_conv1,), kwargs = {})
    %relu_1 : [num_users=1] = call_function[target=torch.relu](args = (%layer_0_bn1,), kwargs = {})
    %layer_0_conv2 : [num_users=1] = call_module[target=layer.0.conv2](args = (%relu_1,), kwargs = {})
    %layer_0_bn2 : [num_users=1] = call_module[target=layer.0.bn2](args = (%layer_0_conv2,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%layer_0_bn2, %relu), kwargs = {})
    %relu_2 : [num_users=2] = call_function[target=torch.relu](args = (%add,), kwargs = {})
    %layer_1_conv1 : [num_users=1] = call_module[target=layer.1.conv1](args = (%relu_2,), kwargs = {})
    %layer_1_bn1 : [num_users=1] = call_module[target=layer.1.bn1](args = (%layer_1_conv1,), kwargs = {})
    %relu_3 : [num_users=1] = call_function[target=torch.relu](args = (%layer_1_bn1,), kwargs = {})
    %layer_1_conv2 : [num_users=1] = call_module[target=layer.1.conv2](args = (%relu_3,), kwargs = {})
    %layer_1_bn2 : [num_users=1] = call_module[target=layer.1.bn2](args = (%layer_1_conv2,), kwargs = {})
    %add_1 : [num_users=1] = call_function[target=operator.add](args = (%layer_1_bn2, %relu_2), kwargs = {})
    %relu_4 : [num_users=1] = call_function[target=torch.relu](args = (%add_1,), kwargs = {})
    %pool : [num_users=1] = call_module[target=pool](args = (%relu_4,), kwargs = {})
    %flatten : [num_users=1] = call_function[target=torch.flatten](args = (%pool, 1), kwargs = {})
    %fc : [num_users=1] = call_module[target=fc](args = (%flatten,), kwargs = {})
    return fc"""
CNN_CODE = (
    '\n\n\ndef forward(self, x):\n    stem = self.stem(x);  x = None\n'
    '    relu = torch.relu(stem);  stem = None\n'
    '    layer_0_conv1 = getattr(self.layer, "0").conv1(relu)\n'
    '    layer_0_bn1 = getattr(self.layer, "0").bn1(layer_0_conv1);  layer_0_conv1 = None\n'
    '    relu_1 = torch.relu(layer_0_bn1);  layer_0_bn1 = None\n'
    '    layer_0_conv2 = getattr(self.layer, "0").conv2(relu_1);  relu_1 = None\n'
    '    layer_0_bn2 = getattr(self.layer, "0").bn2(layer_0_conv2);  layer_0_conv2 = None\n'
    '    add = layer_0_bn2 + relu;  layer_0_bn2 = relu = None\n'
    '    relu_2 = torch.relu(add);  add = None\n'
    '    layer_1_conv1 = getattr(self.layer, "1").conv1(relu_2)\n'
    '    layer_1_bn1 = getattr(self.layer, "1").bn1(layer_1_conv1);  layer_1_conv1 = None\n'
    '    relu_3 = torch.relu(layer_1_bn1);  layer_1_bn1 = None\n'
    '    layer_1_conv2 = getattr(self.layer, "1").conv2(relu_3);  relu_3 = None\n'
    '    layer_1_bn2 = getattr(self.layer, "1").bn2(layer_1_conv2);  layer_1_conv2 = None\n'
    '    add_1 = layer_1_bn2 + relu_2;  layer_1_bn2 = relu_2 = None\n'
    '    relu_4 = torch.relu(add_1);  add_1 = None\n'
    '    pool = self.pool(relu_4);  relu_4 = None\n'
    '    flatten = torch.flatten(pool, 1);  pool = None\n'
    '    fc = self.fc(flatten);  flatten = None\n    return fc\n    ')

OPS_GRAPH = """graph():
    %x : [num_users=8] = placeholder[target=x]
    %y : [num_users=0] = placeholder[target=y](default=None)
    %lin : [num_users=1] = call_module[target=lin](args = (%x,), kwargs = {})
    %add : [num_users=1] = call_function[target=operator.add](args = (%lin, %x), kwargs = {})
    %param : [num_users=1] = get_attr[target=param]
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%add, %param), kwargs = {})
    %shift : [num_users=1] = get_attr[target=shift]
    %sub : [num_users=7] = call_function[target=operator.sub](args = (%mul, %shift), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%sub,), kwargs = {})
    %sum_1 : [num_users=1] = call_method[target=sum](args = (%relu,), kwargs = {dim: -1, keepdim: True})
    %getattr_1 : [num_users=1] = call_function[target=builtins.getattr](args = (%x, shape), kwargs = {})
    %getitem : [num_users=1] = call_function[target=operator.getitem](args = (%getattr_1, 0), kwargs = {})
    %const : [num_users=1] = get_attr[target=const]
    %add_1 : [num_users=1] = call_method[target=add](args = (%const, %sub), kwargs = {})
    %view : [num_users=1] = call_method[target=view](args = (%sub, %getitem, -1), kwargs = {})
    %sub_1 : [num_users=1] = call_function[target=operator.sub](args = (%view, %sum_1), kwargs = {})
    %getitem_1 : [num_users=1] = call_function[target=operator.getitem](args = (%x, (slice(None, None, None), slice(0, 2, None))), kwargs = {})
    %cat : [num_users=1] = call_function[target=torch.cat](args = ([%sub, %x], 1), kwargs = {})
    %transpose : [num_users=1] = call_method[target=transpose](args = (%cat, 0, 1), kwargs = {})
    %neg : [num_users=1] = call_function[target=operator.neg](args = (%x,), kwargs = {})
    %mul_1 : [num_users=1] = call_function[target=operator.mul](args = (2, %add_1), kwargs = {})
    %size : [num_users=1] = call_method[target=size](args = (%sub, 1), kwargs = {})
    %getattr_2 : [num_users=1] = call_function[target=builtins.getattr](args = (%x, T), kwargs = {})
    %matmul : [num_users=1] = call_function[target=operator.matmul](args = (%getattr_2, %sub), kwargs = {})
    %pow_1 : [num_users=1] = call_function[target=operator.pow](args = (%sub, 2), kwargs = {})
    %truediv : [num_users=1] = call_function[target=operator.truediv](args = (%pow_1, 3), kwargs = {})
    %getattr_3 : [num_users=1] = call_function[target=builtins.getattr](args = (%x, dtype), kwargs = {})
    return (sub_1, getitem_1, transpose, neg, mul_1, size, matmul, truediv, getattr_3)"""
OPS_CODE = (
    '\n\n\ndef forward(self, x, y = None):\n    lin = self.lin(x)\n'
    '    add = lin + x;  lin = None\n    param = self.param\n'
    '    mul = add * param;  add = param = None\n    shift = self.shift\n'
    '    sub = mul - shift;  mul = shift = None\n    relu = torch.relu(sub)\n'
    '    sum_1 = relu.sum(dim = -1, keepdim = True);  relu = None\n'
    '    getattr_1 = x.shape\n    getitem = getattr_1[0];  getattr_1 = None\n'
    '    const = self.const\n    add_1 = const.add(sub);  const = None\n'
    '    view = sub.view(getitem, -1);  getitem = None\n'
    '    sub_1 = view - sum_1;  view = sum_1 = None\n'
    '    getitem_1 = x[(slice(None, None, None), slice(0, 2, None))]\n'
    '    cat = torch.cat([sub, x], 1)\n    transpose = cat.transpose(0, 1);  cat = None\n'
    '    neg = -x\n    mul_1 = 2 * add_1;  add_1 = None\n    size = sub.size(1)\n'
    '    getattr_2 = x.T\n    matmul = getattr_2 @ sub;  getattr_2 = None\n'
    '    pow_1 = sub ** 2;  sub = None\n    truediv = pow_1 / 3;  pow_1 = None\n'
    '    getattr_3 = x.dtype;  x = None\n'
    '    return (sub_1, getitem_1, transpose, neg, mul_1, size, matmul, truediv, getattr_3)\n'
    '    ')

SCALED_CODE = ('\ntorch.fx._symbolic_trace.wrap("math_sqrt")\n\n'
               'def forward(self, x, scale : float = 1.0):\n'
               '    sqrt = math_sqrt(scale);  scale = None\n'
               '    mul = x * sqrt;  x = sqrt = None\n    return mul\n    ')


def wrapped_helper(x, k):
    return x * k


fx.wrap("wrapped_helper")


def same(a, b):
    if isinstance(a, ptl.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("name,graph,code,shape", [
    ("MLP", MLP_GRAPH, MLP_CODE, (5, 4)),
    ("CNN", CNN_GRAPH, CNN_CODE, (2, 3, 8, 8)),
    ("Ops", OPS_GRAPH, OPS_CODE, (4, 4)),
])
def test_graph_and_code_are_pytorchs(name, graph, code, shape):
    ptl.manual_seed(0)
    model = M[name]().eval()
    gm = fx.symbolic_trace(model)
    assert str(gm.graph) == graph
    assert gm.code == code
    assert type(gm).__name__ == name
    x = ptl.randn(*shape)
    assert same(gm(x), model(x))


def test_math_is_autowrapped_and_annotations_print():
    gm = fx.symbolic_trace(M["Scaled"]())
    assert gm.code == SCALED_CODE
    assert "%scale : float [num_users=1] = placeholder[target=scale](default=1.0)" in \
        str(gm.graph)
    x = ptl.randn(3)
    assert same(gm(x, 4.0), x * 2.0)


def test_state_and_parameters_are_carried():
    model = M["Ops"]()
    gm = fx.symbolic_trace(model)
    assert sorted(gm.state_dict()) == ["const", "lin.bias", "lin.weight", "param", "shift"]
    assert gm.lin.weight is model.lin.weight
    assert [n for n, _ in gm.named_parameters()] == ["param", "lin.weight", "lin.bias"]


def functions_and_methods(t):
    def f(x, y):
        a = t.add(x, y, alpha=2)
        b = t.softmax(a, dim=1)
        c = t.where(b > 0.5, b, t.zeros_like(b))
        d = c.exp().clamp(min=0.1)
        e = c.max(dim=1)
        return d, e.values, x.new_ones(2, dtype=t.int32), t.stack((x, y))
    return f


FUNCTIONS_CODE = """


def forward(self, x, y):
    add = torch.add(x, y, alpha = 2)
    softmax = torch.softmax(add, dim = 1);  add = None
    gt = softmax > 0.5
    zeros_like = torch.zeros_like(softmax)
    where = torch.where(gt, softmax, zeros_like);  gt = softmax = zeros_like = None
    exp = where.exp()
    clamp = exp.clamp(min = 0.1);  exp = None
    max_1 = where.max(dim = 1);  where = None
    new_ones = x.new_ones(2, dtype = torch.int32)
    stack = torch.stack((x, y));  x = y = None
    getattr_1 = max_1.values;  max_1 = None
    return (clamp, getattr_1, new_ones, stack)
    """


def test_functions_and_tensor_methods_record_their_calls():
    f = functions_and_methods(ptl)
    gm = fx.symbolic_trace(f)
    assert gm.code == FUNCTIONS_CODE
    x, y = ptl.randn(3, 3), ptl.randn(3, 3)
    assert same(gm(x, y), f(x, y))


@torch_ref
def test_functions_and_tensor_methods_as_torch():
    assert torch.fx.symbolic_trace(functions_and_methods(torch)).code == FUNCTIONS_CODE


def test_unpacking_a_proxy_records_getitems():
    def f(x):
        a, b = x.split(2)
        return a + b
    gm = fx.symbolic_trace(f)
    assert "getitem = split[0]\n    getitem_1 = split[1];  split = None" in gm.code
    x = ptl.randn(4, 2)
    assert same(gm(x), f(x))


def test_varargs_become_one_placeholder():
    def f(x, *args):
        return x + args[0]
    gm = fx.symbolic_trace(f)
    assert "def forward(self, x, *args):\n    _args = args\n" in gm.code
    assert same(gm(ptl.ones(2), ptl.ones(2)), ptl.full((2,), 2.0))


def test_concrete_args_specialize_and_check():
    def f(a, b, flag):
        if flag:
            return a + b
        return a - b
    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    assert gm.code == (
        "\n\n\ndef forward(self, a, b, flag_1):\n"
        "    eq = flag_1 == True;  flag_1 = None\n"
        "    _assert = torch._assert(eq, 'flag has been specialized to have value True but got "
        "another value');  eq = _assert = None\n"
        "    add = a + b;  a = b = None\n    return add\n    ")
    a, b = ptl.ones(2), ptl.ones(2)
    assert same(gm(a, b, True), a + b)
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        gm(a, b, False)
    gm = fx.symbolic_trace(f, concrete_args={"flag": None})
    assert "torch.fx._symbolic_trace._assert_is_none(flag_1, 'flag has been specialized to " \
        "have value None but got another value')" in gm.code
    gm = fx.symbolic_trace(f, concrete_args={"b": fx.PH, "flag": False})
    assert "def forward(self, a, b_1, flag_1):" in gm.code
    assert same(gm(a, b, False), a - b)


def test_leaf_modules():
    class Deep(fx.Tracer):
        def is_leaf_module(self, m, qualified_name):
            return False

    class Whole(fx.Tracer):
        def is_leaf_module(self, m, qualified_name):
            return True

    model = M["MLP"]()
    deep = Deep().trace(model)
    assert [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
            for n in deep.nodes] == [
        ("placeholder", "x"), ("get_attr", "fc1.weight"), ("get_attr", "fc1.bias"),
        ("call_function", "linear"), ("call_function", "relu"), ("get_attr", "fc2.weight"),
        ("get_attr", "fc2.bias"), ("call_function", "linear"), ("output", "output")]
    gm = fx.GraphModule(model, deep)
    x = ptl.randn(2, 4)
    assert same(gm(x), model(x))
    seq = ptl.nn.Sequential(ptl.nn.Linear(2, 2), ptl.nn.Tanh())
    assert [n.target for n in fx.symbolic_trace(seq).graph.nodes] == ["input", "0", "1", "output"]
    outer = ptl.nn.Sequential(seq)
    assert [n.target for n in Whole().trace(outer).nodes] == ["input", "0", "output"]
    nodes = list(fx.Tracer().trace(outer).nodes)
    assert nodes[1].meta["nn_module_stack"] == {"0": ("0", ptl.nn.Sequential),
                                                "0.0": ("0.0", ptl.nn.Linear)}


def test_wrap_records_the_call():
    def f(x):
        return wrapped_helper(x, 2.0) + 1
    gm = fx.symbolic_trace(f)
    # the global's name is the function's qualified name (<module>.<name>), as PyTorch's
    assert gm.code.startswith('\ntorch.fx._symbolic_trace.wrap("test_fx_trace_wrapped_helper")')
    assert "wrapped_helper = test_fx_trace_wrapped_helper(x, 2.0)" in gm.code
    x = ptl.randn(3)
    assert same(gm(x), f(x))
    assert wrapped_helper(1, 2) == 2          # unpatched after the trace
    with pytest.raises(NotImplementedError, match="wrap must be called at the top level"):
        fx.wrap("len")


TRACE_ERROR_ITER = (
    "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
    "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
    "more detailed explanation of what types of control flow can be traced, and check out the "
    "Proxy docstring for help troubleshooting Proxy iteration errors")


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda x: x if x.sum() > 0 else -x, fx.proxy.TraceError,
     "symbolically traced variables cannot be used as inputs to control flow"),
    (lambda x: [a for a in x], fx.proxy.TraceError, TRACE_ERROR_ITER),
    (lambda x: (*x,), fx.proxy.TraceError, TRACE_ERROR_ITER),
    (lambda x: len(x), RuntimeError,
     "'len' is not supported in symbolic tracing by default. If you want this call to be "
     "recorded, please call torch.fx.wrap('len') at module scope"),
])
def test_control_flow_on_a_proxy_raises(fn, exc, msg):
    with pytest.raises(exc) as info:
        fx.symbolic_trace(fn)
    assert str(info.value) == msg
    assert issubclass(fx.proxy.TraceError, ValueError)
    assert ptl.nn.Module.__call__.__name__ == "__call__"   # the patches were undone


def test_arguments_that_cannot_be_recorded():
    with pytest.raises(NotImplementedError, match="argument of type: <class 'object'>"):
        fx.symbolic_trace(lambda x: ptl.add(x, object()))


def test_import_as_torch():
    code = ("from pytorchlite.utils import as_torch; as_torch()\n"
            "import torch, torch.fx\n"
            "from torch.fx.passes.shape_prop import ShapeProp\n"
            "gm = torch.fx.symbolic_trace(torch.nn.Linear(2, 2))\n"
            "ShapeProp(gm).propagate(torch.ones(3, 2))\n"
            "print(type(gm).__module__, list(gm.graph.nodes)[-2].meta['tensor_meta'].shape)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out == "pytorchlite.fx.graph_module torch.Size([3, 2])\n"


@torch_ref
@pytest.mark.parametrize("name", ["MLP", "CNN", "Ops", "Scaled"])
def test_same_graph_and_code_as_torch(name):
    theirs = models(torch)[name]()
    ours = M[name]()
    g_theirs, g_ours = torch.fx.symbolic_trace(theirs), fx.symbolic_trace(ours)
    assert str(g_ours.graph) == str(g_theirs.graph)
    assert g_ours.code == g_theirs.code


@torch_ref
def test_same_errors_as_torch():
    for fn in (lambda x: x if x.sum() > 0 else -x, lambda x: [a for a in x], lambda x: len(x)):
        with pytest.raises(Exception) as theirs:
            torch.fx.symbolic_trace(fn)
        with pytest.raises(Exception) as ours:
            fx.symbolic_trace(fn)
        assert type(ours.value).__name__ == type(theirs.value).__name__
        assert str(ours.value) == str(theirs.value)


def test_math_module_is_left_alone():
    assert math.sqrt(4.0) == 2.0


def test_keyword_only_and_var_keyword_arguments():
    def f(x, *, scale=2.0, **extra):
        return x * scale + extra["bias"]
    gm = fx.symbolic_trace(f)
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == \
        ["x", "scale", "**extra"]
    x = ptl.ones(2)
    assert "def forward(self, x, scale = 2.0, **extra):\n    _extra = extra\n" in gm.code
    assert same(gm(x, 3.0, bias=1.0), ptl.full((2,), 4.0))


def test_proxies_on_a_graph_build_it():
    g = fx.Graph()
    x = fx.Proxy(g.placeholder("x"))
    y = ptl.relu(x) * 2 + x.sum()
    g.output(y.node)
    assert [n.name for n in g.nodes] == ["x", "relu", "mul", "sum_1", "add", "output"]
    gm = fx.GraphModule(ptl.nn.Module(), g)
    v = ptl.tensor([-1.0, 3.0])
    assert same(gm(v), ptl.relu(v) * 2 + v.sum())
    assert repr(y) == "Proxy(add)"
    assert not fx._symbolic_trace.is_fx_tracing()


def test_annotations_become_globals_of_the_code():
    import typing

    class Annotated(ptl.nn.Module):
        def forward(self, x: ptl.Tensor, y: typing.Optional[ptl.Tensor] = None) \
                -> typing.Tuple[ptl.Tensor, int]:
            return x + 1, 2
    gm = fx.symbolic_trace(Annotated())
    assert "%y : typing.Optional[torch.Tensor] [num_users=0] = placeholder[target=y]" \
        "(default=None)" in str(gm.graph)
    assert "def forward(self, x : torch.Tensor, y : typing_Union[torch.Tensor,NoneType] = " \
        "None) -> typing_Tuple[torch.Tensor,int]:\n" in gm.code
    assert gm(ptl.ones(1))[1] == 2


def test_param_shapes_constant():
    class M(ptl.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ptl.nn.Linear(2, 3)

        def forward(self, x):
            w = self.lin.weight
            if w.shape[0] > 2 and w.dim() == 2 and w.ndim == 2:
                return self.lin(x) * w.size(1)
            return x
    g = fx.Tracer(param_shapes_constant=True).trace(M())
    assert str(g) == """graph():
    %x : [num_users=1] = placeholder[target=x]
    %lin_weight : [num_users=0] = get_attr[target=lin.weight]
    %lin : [num_users=1] = call_module[target=lin](args = (%x,), kwargs = {})
    %mul : [num_users=1] = call_function[target=operator.mul](args = (%lin, 2), kwargs = {})
    return mul"""
    with pytest.raises(fx.proxy.TraceError):
        fx.Tracer().trace(M())
