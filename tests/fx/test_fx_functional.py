"""torch.nn.functional under torch.fx and __torch_function__: a call of a function PyTorch
writes in Python is seen with every argument (the defaults filled in), one it writes in C as
made and under its C name (torch._C._nn.linear, torch.conv2d), so the nn layers traced into
give PyTorch's graph and code (the expected strings are PyTorch 2.13's for fx_models.py's
Layers and Activations) and run the same.  The torch_ref tests compare every function with a
live PyTorch."""
import inspect
import types

import pytest

import pytorchlite as ptl
from pytorchlite import fx
from fx_models import models
from helpers import torch, torch_ref

M = models(ptl)

LAYERS_GRAPH = """graph():
    %x : [num_users=1] = placeholder[target=x]
    %idx : [num_users=2] = placeholder[target=idx]
    %conv_weight : [num_users=1] = get_attr[target=conv.weight]
    %conv_bias : [num_users=1] = get_attr[target=conv.bias]
    %conv2d : [num_users=1] = call_function[target=torch.conv2d](args = (%x, %conv_weight, %conv_bias, (1, 1), (1, 1), (1, 1), 1), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.nn.functional.relu](args = (%conv2d,), kwargs = {inplace: False})
    %max_pool2d : [num_users=1] = call_function[target=torch.nn.functional.max_pool2d](args = (%relu, 2), kwargs = {stride: 2, padding: 0, dilation: 1, ceil_mode: False, return_indices: False})
    %avg_pool2d : [num_users=1] = call_function[target=torch._C._nn.avg_pool2d](args = (%max_pool2d, 2, 2, 0, False, True, None), kwargs = {})
    %adaptive_avg_pool2d : [num_users=1] = call_function[target=torch.nn.functional.adaptive_avg_pool2d](args = (%avg_pool2d, 1), kwargs = {})
    %flatten : [num_users=1] = call_method[target=flatten](args = (%adaptive_avg_pool2d, 1), kwargs = {})
    %dropout : [num_users=1] = call_function[target=torch.nn.functional.dropout](args = (%flatten,), kwargs = {p: 0.1, training: False, inplace: False})
    %fc_weight : [num_users=1] = get_attr[target=fc.weight]
    %fc_bias : [num_users=1] = get_attr[target=fc.bias]
    %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%dropout, %fc_weight, %fc_bias), kwargs = {})
    %gelu : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%linear,), kwargs = {approximate: none})
    %ln_weight : [num_users=1] = get_attr[target=ln.weight]
    %ln_bias : [num_users=1] = get_attr[target=ln.bias]
    %layer_norm : [num_users=1] = call_function[target=torch.nn.functional.layer_norm](args = (%gelu, (6,)), kwargs = {weight: %ln_weight, bias: %ln_bias, eps: 1e-05})
    %emb_weight : [num_users=1] = get_attr[target=emb.weight]
    %embedding : [num_users=1] = call_function[target=torch.nn.functional.embedding](args = (%idx, %emb_weight), kwargs = {padding_idx: None, max_norm: None, norm_type: 2.0, scale_grad_by_freq: False, sparse: False})
    %add : [num_users=2] = call_function[target=operator.add](args = (%layer_norm, %embedding), kwargs = {})
    %softmax : [num_users=1] = call_function[target=torch.nn.functional.softmax](args = (%add,), kwargs = {dim: -1, _stacklevel: 5, dtype: None})
    %log_softmax : [num_users=1] = call_function[target=torch.nn.functional.log_softmax](args = (%add,), kwargs = {dim: 1, _stacklevel: 5, dtype: None})
    %cross_entropy : [num_users=1] = call_function[target=torch.nn.functional.cross_entropy](args = (%log_softmax, %idx), kwargs = {weight: None, size_average: None, ignore_index: -100, reduce: None, reduction: mean, label_smoothing: 0.0})
    return (softmax, cross_entropy)"""

LAYERS_CODE = """


def forward(self, x, idx):
    conv_weight = self.conv.weight
    conv_bias = self.conv.bias
    conv2d = torch.conv2d(x, conv_weight, conv_bias, (1, 1), (1, 1), (1, 1), 1);  x = conv_weight = conv_bias = None
    relu = torch.nn.functional.relu(conv2d, inplace = False);  conv2d = None
    max_pool2d = torch.nn.functional.max_pool2d(relu, 2, stride = 2, padding = 0, dilation = 1, ceil_mode = False, return_indices = False);  relu = None
    avg_pool2d = torch._C._nn.avg_pool2d(max_pool2d, 2, 2, 0, False, True, None);  max_pool2d = None
    adaptive_avg_pool2d = torch.nn.functional.adaptive_avg_pool2d(avg_pool2d, 1);  avg_pool2d = None
    flatten = adaptive_avg_pool2d.flatten(1);  adaptive_avg_pool2d = None
    dropout = torch.nn.functional.dropout(flatten, p = 0.1, training = False, inplace = False);  flatten = None
    fc_weight = self.fc.weight
    fc_bias = self.fc.bias
    linear = torch._C._nn.linear(dropout, fc_weight, fc_bias);  dropout = fc_weight = fc_bias = None
    gelu = torch._C._nn.gelu(linear, approximate = 'none');  linear = None
    ln_weight = self.ln.weight
    ln_bias = self.ln.bias
    layer_norm = torch.nn.functional.layer_norm(gelu, (6,), weight = ln_weight, bias = ln_bias, eps = 1e-05);  gelu = ln_weight = ln_bias = None
    emb_weight = self.emb.weight
    embedding = torch.nn.functional.embedding(idx, emb_weight, padding_idx = None, max_norm = None, norm_type = 2.0, scale_grad_by_freq = False, sparse = False);  emb_weight = None
    add = layer_norm + embedding;  layer_norm = embedding = None
    softmax = torch.nn.functional.softmax(add, dim = -1, _stacklevel = 5, dtype = None)
    log_softmax = torch.nn.functional.log_softmax(add, dim = 1, _stacklevel = 5, dtype = None);  add = None
    cross_entropy = torch.nn.functional.cross_entropy(log_softmax, idx, weight = None, size_average = None, ignore_index = -100, reduce = None, reduction = 'mean', label_smoothing = 0.0);  log_softmax = idx = None
    return (softmax, cross_entropy)
    """

ACTIVATIONS_GRAPH = """graph():
    %x : [num_users=1] = placeholder[target=x]
    %silu : [num_users=1] = call_function[target=torch.nn.functional.silu](args = (%x,), kwargs = {inplace: False})
    %leaky_relu : [num_users=1] = call_function[target=torch.nn.functional.leaky_relu](args = (%silu,), kwargs = {negative_slope: 0.2, inplace: False})
    %elu : [num_users=1] = call_function[target=torch.nn.functional.elu](args = (%leaky_relu,), kwargs = {alpha: 1.0, inplace: False})
    %softplus : [num_users=1] = call_function[target=torch._C._nn.softplus](args = (%elu, 1.0, 20.0), kwargs = {})
    %hardtanh : [num_users=1] = call_function[target=torch.nn.functional.hardtanh](args = (%softplus,), kwargs = {min_val: -1.0, max_val: 1.0, inplace: False})
    %tanh : [num_users=1] = call_function[target=torch.tanh](args = (%hardtanh,), kwargs = {})
    %sigmoid : [num_users=1] = call_function[target=torch.sigmoid](args = (%tanh,), kwargs = {})
    %hardtanh_1 : [num_users=1] = call_function[target=torch.nn.functional.hardtanh](args = (%sigmoid,), kwargs = {min_val: 0.0, max_val: 6.0, inplace: False})
    %hardswish : [num_users=1] = call_function[target=torch.nn.functional.hardswish](args = (%hardtanh_1,), kwargs = {inplace: False})
    %mish : [num_users=1] = call_function[target=torch.nn.functional.mish](args = (%hardswish,), kwargs = {inplace: False})
    %gelu : [num_users=1] = call_function[target=torch._C._nn.gelu](args = (%mish,), kwargs = {approximate: tanh})
    %softmin : [num_users=1] = call_function[target=torch.nn.functional.softmin](args = (%gelu,), kwargs = {dim: 1, _stacklevel: 5, dtype: None})
    %hardsigmoid : [num_users=1] = call_function[target=torch.nn.functional.hardsigmoid](args = (%softmin,), kwargs = {inplace: False})
    %celu : [num_users=1] = call_function[target=torch.nn.functional.celu](args = (%hardsigmoid,), kwargs = {alpha: 1.0, inplace: False})
    %selu : [num_users=1] = call_function[target=torch.nn.functional.selu](args = (%celu,), kwargs = {inplace: False})
    %log_sigmoid : [num_users=1] = call_function[target=torch._C._nn.log_sigmoid](args = (%selu,), kwargs = {})
    %softsign : [num_users=1] = call_function[target=torch.nn.functional.softsign](args = (%log_sigmoid,), kwargs = {})
    %tanhshrink : [num_users=1] = call_function[target=torch.nn.functional.tanhshrink](args = (%softsign,), kwargs = {})
    %softshrink : [num_users=1] = call_function[target=torch._C._nn.softshrink](args = (%tanhshrink, 0.5), kwargs = {})
    %hardshrink : [num_users=1] = call_function[target=torch.hardshrink](args = (%softshrink, 0.5), kwargs = {})
    %_threshold : [num_users=1] = call_function[target=torch.nn.functional._threshold](args = (%hardshrink, 0.1, 0.0), kwargs = {inplace: False})
    %rrelu : [num_users=1] = call_function[target=torch.nn.functional.rrelu](args = (%_threshold,), kwargs = {lower: 0.125, upper: 0.3333333333333333, training: False, inplace: False})
    %prelu_weight : [num_users=1] = get_attr[target=prelu.weight]
    %prelu : [num_users=1] = call_function[target=torch.prelu](args = (%rrelu, %prelu_weight), kwargs = {})
    %c1_weight : [num_users=1] = get_attr[target=c1.weight]
    %c1_bias : [num_users=1] = get_attr[target=c1.bias]
    %conv1d : [num_users=1] = call_function[target=torch.conv1d](args = (%prelu, %c1_weight, %c1_bias, (1,), (0,), (1,), 1), kwargs = {})
    %gn_weight : [num_users=1] = get_attr[target=gn.weight]
    %gn_bias : [num_users=1] = get_attr[target=gn.bias]
    %group_norm : [num_users=1] = call_function[target=torch.nn.functional.group_norm](args = (%conv1d, 2), kwargs = {weight: %gn_weight, bias: %gn_bias, eps: 1e-05})
    %max_pool1d : [num_users=1] = call_function[target=torch.nn.functional.max_pool1d](args = (%group_norm, 2), kwargs = {stride: 2, padding: 0, dilation: 1, ceil_mode: False, return_indices: False})
    %avg_pool1d : [num_users=1] = call_function[target=torch.avg_pool1d](args = (%max_pool1d, (2,), (2,), (0,), False, True), kwargs = {})
    %adaptive_max_pool1d : [num_users=1] = call_function[target=torch.nn.functional.adaptive_max_pool1d](args = (%avg_pool1d, 2), kwargs = {return_indices: False})
    %ct_weight : [num_users=1] = get_attr[target=ct.weight]
    %ct_bias : [num_users=1] = get_attr[target=ct.bias]
    %conv_transpose1d : [num_users=5] = call_function[target=torch.conv_transpose1d](args = (%adaptive_max_pool1d, %ct_weight, %ct_bias, (1,), (0,), (0,), 1, (1,)), kwargs = {})
    %glu : [num_users=1] = call_function[target=torch.nn.functional.glu](args = (%conv_transpose1d,), kwargs = {dim: -1})
    %mse_loss : [num_users=1] = call_function[target=torch.nn.functional.mse_loss](args = (%conv_transpose1d, %conv_transpose1d), kwargs = {size_average: None, reduce: None, reduction: mean, weight: None})
    %l1_loss : [num_users=1] = call_function[target=torch.nn.functional.l1_loss](args = (%conv_transpose1d, %conv_transpose1d), kwargs = {size_average: None, reduce: None, reduction: mean})
    %binary_cross_entropy_with_logits : [num_users=1] = call_function[target=torch.nn.functional.binary_cross_entropy_with_logits](args = (%conv_transpose1d, %conv_transpose1d), kwargs = {weight: None, size_average: None, reduce: None, reduction: mean, pos_weight: None})
    %dropout1d : [num_users=1] = call_function[target=torch.nn.functional.dropout1d](args = (%conv_transpose1d,), kwargs = {p: 0.5, training: False, inplace: False})
    return (glu, mse_loss, l1_loss, binary_cross_entropy_with_logits, dropout1d)"""

ACTIVATIONS_CODE = """


def forward(self, x):
    silu = torch.nn.functional.silu(x, inplace = False);  x = None
    leaky_relu = torch.nn.functional.leaky_relu(silu, negative_slope = 0.2, inplace = False);  silu = None
    elu = torch.nn.functional.elu(leaky_relu, alpha = 1.0, inplace = False);  leaky_relu = None
    softplus = torch._C._nn.softplus(elu, 1.0, 20.0);  elu = None
    hardtanh = torch.nn.functional.hardtanh(softplus, min_val = -1.0, max_val = 1.0, inplace = False);  softplus = None
    tanh = torch.tanh(hardtanh);  hardtanh = None
    sigmoid = torch.sigmoid(tanh);  tanh = None
    hardtanh_1 = torch.nn.functional.hardtanh(sigmoid, min_val = 0.0, max_val = 6.0, inplace = False);  sigmoid = None
    hardswish = torch.nn.functional.hardswish(hardtanh_1, inplace = False);  hardtanh_1 = None
    mish = torch.nn.functional.mish(hardswish, inplace = False);  hardswish = None
    gelu = torch._C._nn.gelu(mish, approximate = 'tanh');  mish = None
    softmin = torch.nn.functional.softmin(gelu, dim = 1, _stacklevel = 5, dtype = None);  gelu = None
    hardsigmoid = torch.nn.functional.hardsigmoid(softmin, inplace = False);  softmin = None
    celu = torch.nn.functional.celu(hardsigmoid, alpha = 1.0, inplace = False);  hardsigmoid = None
    selu = torch.nn.functional.selu(celu, inplace = False);  celu = None
    log_sigmoid = torch._C._nn.log_sigmoid(selu);  selu = None
    softsign = torch.nn.functional.softsign(log_sigmoid);  log_sigmoid = None
    tanhshrink = torch.nn.functional.tanhshrink(softsign);  softsign = None
    softshrink = torch._C._nn.softshrink(tanhshrink, 0.5);  tanhshrink = None
    hardshrink = torch.hardshrink(softshrink, 0.5);  softshrink = None
    _threshold = torch.nn.functional._threshold(hardshrink, 0.1, 0.0, inplace = False);  hardshrink = None
    rrelu = torch.nn.functional.rrelu(_threshold, lower = 0.125, upper = 0.3333333333333333, training = False, inplace = False);  _threshold = None
    prelu_weight = self.prelu.weight
    prelu = torch.prelu(rrelu, prelu_weight);  rrelu = prelu_weight = None
    c1_weight = self.c1.weight
    c1_bias = self.c1.bias
    conv1d = torch.conv1d(prelu, c1_weight, c1_bias, (1,), (0,), (1,), 1);  prelu = c1_weight = c1_bias = None
    gn_weight = self.gn.weight
    gn_bias = self.gn.bias
    group_norm = torch.nn.functional.group_norm(conv1d, 2, weight = gn_weight, bias = gn_bias, eps = 1e-05);  conv1d = gn_weight = gn_bias = None
    max_pool1d = torch.nn.functional.max_pool1d(group_norm, 2, stride = 2, padding = 0, dilation = 1, ceil_mode = False, return_indices = False);  group_norm = None
    avg_pool1d = torch.avg_pool1d(max_pool1d, (2,), (2,), (0,), False, True);  max_pool1d = None
    adaptive_max_pool1d = torch.nn.functional.adaptive_max_pool1d(avg_pool1d, 2, return_indices = False);  avg_pool1d = None
    ct_weight = self.ct.weight
    ct_bias = self.ct.bias
    conv_transpose1d = torch.conv_transpose1d(adaptive_max_pool1d, ct_weight, ct_bias, (1,), (0,), (0,), 1, (1,));  adaptive_max_pool1d = ct_weight = ct_bias = None
    glu = torch.nn.functional.glu(conv_transpose1d, dim = -1)
    mse_loss = torch.nn.functional.mse_loss(conv_transpose1d, conv_transpose1d, size_average = None, reduce = None, reduction = 'mean', weight = None)
    l1_loss = torch.nn.functional.l1_loss(conv_transpose1d, conv_transpose1d, size_average = None, reduce = None, reduction = 'mean')
    binary_cross_entropy_with_logits = torch.nn.functional.binary_cross_entropy_with_logits(conv_transpose1d, conv_transpose1d, weight = None, size_average = None, reduce = None, reduction = 'mean', pos_weight = None)
    dropout1d = torch.nn.functional.dropout1d(conv_transpose1d, p = 0.5, training = False, inplace = False);  conv_transpose1d = None
    return (glu, mse_loss, l1_loss, binary_cross_entropy_with_logits, dropout1d)
    """


def deep_trace(t, name):
    t.manual_seed(0)
    model = models(t)[name]().eval()
    gm = t.fx.GraphModule(model, models(t)["DeepTracer"]().trace(model), name)
    return model, gm


def layer_inputs(t, name):
    t.manual_seed(1)
    if name == "Layers":
        return t.randn(2, 3, 8, 8), t.tensor([1, 5])
    return (t.randn(2, 4, 14),)


@pytest.mark.parametrize("name,graph,code", [
    ("Layers", LAYERS_GRAPH, LAYERS_CODE),
    ("Activations", ACTIVATIONS_GRAPH, ACTIVATIONS_CODE),
], ids=["Layers", "Activations"])
def test_layers_trace_into_pytorchs_functional_calls(name, graph, code):
    model, gm = deep_trace(ptl, name)
    assert str(gm.graph) == graph
    assert gm.code == code
    inputs = layer_inputs(ptl, name)
    for ours, expected in zip(gm(*inputs), model(*inputs)):
        assert ptl.equal(ours, expected)


@torch_ref
@pytest.mark.parametrize("name", ["Layers", "Activations"])
def test_layers_same_graph_and_code_as_torch(name):
    _, ours = deep_trace(ptl, name)
    _, theirs = deep_trace(torch, name)
    assert str(ours.graph) == str(theirs.graph)
    assert ours.code == theirs.code


def call_forms(t):
    F = t.nn.functional
    return [
        lambda x: F.relu(x),
        lambda x, w: F.linear(x, w),
        lambda x, w, b: F.linear(x, w, bias=b),
        lambda x: F.softmax(x, 1),
        lambda x: F.max_pool2d(x, 2),
        lambda x: F.max_pool2d(x, 2, 1, 0, 1, False, True),
        lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True),
        lambda x: F.logsigmoid(x),
        lambda x: F.threshold(x, 0.5, 0.0),
        lambda x, w: F.l1_loss(x, w),
        lambda x: F.upsample_nearest(x, scale_factor=2),
        lambda x, w: F.prelu(x, w),
        lambda x, w: x.prelu(w),
        lambda x: F.rms_norm(x, (4,)),
        lambda x: t.rms_norm(x, (4,)),
        lambda x: F.relu_(x),
        lambda x: F.avg_pool1d(x, 2),
        lambda x, w: F.conv2d(x, w, padding="same"),
        lambda x: F.layer_norm(x, (4,), eps=1e-3),
        lambda x: F.dropout(x, 0.2, training=False),
    ]


CALL_LINES = [
    "relu = torch.nn.functional.relu(x, inplace = False);  x = None",
    "linear = torch._C._nn.linear(x, w);  x = w = None",
    "linear = torch._C._nn.linear(x, w, bias = b);  x = w = b = None",
    "softmax = torch.nn.functional.softmax(x, dim = 1, _stacklevel = 3, dtype = None);  x = None",
    "max_pool2d = torch.nn.functional.max_pool2d(x, 2, stride = None, padding = 0, "
    "dilation = 1, ceil_mode = False, return_indices = False);  x = None",
    "max_pool2d_with_indices = torch.nn.functional.max_pool2d_with_indices(x, 2, stride = 1, "
    "padding = 0, dilation = 1, ceil_mode = False, return_indices = True);  x = None",
    "adaptive_max_pool2d_with_indices = torch.nn.functional.adaptive_max_pool2d_with_indices("
    "x, 2, return_indices = True);  x = None",
    "log_sigmoid = torch._C._nn.log_sigmoid(x);  x = None",
    "_threshold = torch.nn.functional._threshold(x, 0.5, 0.0, inplace = False);  x = None",
    "l1_loss = torch.nn.functional.l1_loss(x, w, size_average = None, reduce = None, "
    "reduction = 'mean');  x = w = None",
    "interpolate = torch.nn.functional.interpolate(x, size = None, scale_factor = 2, "
    "mode = 'nearest', align_corners = None, recompute_scale_factor = None, "
    "antialias = False);  x = None",
    "prelu = torch.prelu(x, w);  x = w = None",
    "prelu = x.prelu(w);  x = w = None",
    "rms_norm = torch.nn.functional.rms_norm(x, (4,), weight = None, eps = None);  x = None",
    "rms_norm = torch.rms_norm(x, (4,));  x = None",
    "relu_ = torch.relu_(x);  x = None",
    "avg_pool1d = torch.avg_pool1d(x, 2);  x = None",
    "conv2d = torch.conv2d(x, w, padding = 'same');  x = w = None",
    "layer_norm = torch.nn.functional.layer_norm(x, (4,), weight = None, bias = None, "
    "eps = 0.001);  x = None",
    "dropout = torch.nn.functional.dropout(x, p = 0.2, training = False, inplace = False);  "
    "x = None",
]


def traced_line(t, f):
    """The one statement of f's generated forward between the def and the return."""
    lines = t.fx.symbolic_trace(f).code.strip().split("\n")
    assert len(lines) == 3
    return lines[1].strip()


@pytest.mark.parametrize("i", range(len(CALL_LINES)))
def test_each_call_form(i):
    assert traced_line(ptl, call_forms(ptl)[i]) == CALL_LINES[i]


@torch_ref
@pytest.mark.parametrize("i", range(len(CALL_LINES)))
def test_each_call_form_as_torch(i):
    assert traced_line(torch, call_forms(torch)[i]) == CALL_LINES[i]


def test_traced_calls_compute_the_same():
    F = ptl.nn.functional
    x, w = ptl.randn(2, 3, 4, 4), ptl.randn(3)
    for f, args in [(call_forms(ptl)[9], (x, x.flip(0))), (call_forms(ptl)[11], (x, w)),
                    (call_forms(ptl)[13], (x,)), (call_forms(ptl)[5], (x,)),
                    (lambda x: F.threshold(x, 0.5, -1.0), (x,))]:
        got, expected = fx.symbolic_trace(f)(*args), f(*args)
        for g, e in zip(got if isinstance(got, tuple) else (got,),
                        expected if isinstance(expected, tuple) else (expected,)):
            assert ptl.equal(g, e)


def test_l1_loss_keeps_a_weight_it_is_given():
    # PyTorch's l1_loss never passes weight on to __torch_function__, so a traced weighted
    # loss would run unweighted; here a weight other than None is passed on
    F = ptl.nn.functional
    gm = fx.symbolic_trace(lambda x, y, w: F.l1_loss(x, y, weight=w))
    assert "reduction = 'mean', weight = w)" in gm.code
    x, y, w = ptl.randn(5), ptl.randn(5), ptl.rand(5)
    assert ptl.equal(gm(x, y, w), F.l1_loss(x, y, weight=w))


def test_a_mode_sees_the_filled_call():
    from pytorchlite.overrides import TorchFunctionMode
    F = ptl.nn.functional
    seen = []

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((func, len(args), dict(kwargs or {})))
            return func(*args, **(kwargs or {}))

    x, w = ptl.randn(2, 3), ptl.randn(4, 3)
    with Record():
        F.relu(x)
        F.linear(x, w)
        F.softmax(x, dim=0)
    assert seen[0] == (F.relu, 1, {"inplace": False})
    assert seen[1] == (ptl._C._nn.linear, 2, {}) and F.linear is ptl._C._nn.linear
    assert seen[2] == (F.softmax, 1, {"dim": 0, "_stacklevel": 3, "dtype": None})


@pytest.mark.parametrize("call,msg", [
    (lambda F, x: F.relu(x, bad=1), r"relu\(\) got an unexpected keyword argument 'bad'"),
    (lambda F, x: F.relu(x, False, 3), r"relu\(\) takes from 1 to 2 positional arguments but 3 "
                                        "were given"),
    (lambda F, x: F.relu(x, input=x), r"relu\(\) got multiple values for argument 'input'"),
    (lambda F, x: F.layer_norm(x), r"layer_norm\(\) missing 1 required positional argument: "
                                   "'normalized_shape'"),
    (lambda F, x: F.max_pool2d(x, 2, bad=1), r"max_pool2d\(\) got an unexpected keyword"),
])
def test_a_wrong_call_raises_the_functions_own_error(call, msg):
    with pytest.raises(TypeError, match=msg):
        fx.symbolic_trace(lambda x: call(ptl.nn.functional, x))


class Seen(Exception):
    """What a recorder's __torch_function__ raises: (qualified name, args, kwargs)."""


def recorder(qualified_name):
    class Recorder:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return self.name

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            raise Seen(qualified_name(func), args, kwargs or {})
    return Recorder


# PyTorch's nn.functional functions that are C (their signatures are not introspectable):
# name -> the tensor arguments and the other arguments of a call
C_CALLS = {
    "adaptive_avg_pool1d": (1, (2,)), "avg_pool1d": (1, (2,)), "avg_pool2d": (1, (2,)),
    "avg_pool3d": (1, (2,)), "bilinear": (3, ()), "celu_": (1, ()), "channel_shuffle": (1, (2,)),
    "conv1d": (2, ()), "conv2d": (2, ()), "conv3d": (2, ()), "conv_tbc": (3, ()),
    "conv_transpose1d": (2, ()), "conv_transpose2d": (2, ()), "conv_transpose3d": (2, ()),
    "cosine_similarity": (2, ()), "elu_": (1, ()), "gelu": (1, ()), "hardshrink": (1, ()),
    "hardtanh_": (1, ()), "leaky_relu_": (1, ()), "linear": (2, ()), "logsigmoid": (1, ()),
    "native_channel_shuffle": (1, (2,)), "one_hot": (1, ()), "pairwise_distance": (2, ()),
    "pdist": (1, ()), "pixel_shuffle": (1, (2,)), "pixel_unshuffle": (1, (2,)),
    "prelu": (2, ()), "relu_": (1, ()), "rrelu_": (1, ()), "scaled_dot_product_attention":
    (3, ()), "selu_": (1, ()), "softplus": (1, ()), "softshrink": (1, ()),
    "threshold_": (1, (0.5, 0.0)),
}
# boolean_dispatch functions (PyTorch's signature is (*args, **kwargs)): name -> extra args
DISPATCHED = ["max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d",
              "adaptive_max_pool2d", "adaptive_max_pool3d", "fractional_max_pool2d",
              "fractional_max_pool3d"]
# not in pytorchlite's nn.functional, or no torch function (sigmoid and tanh call the Tensor
# method, which a recorder does not have)
NOT_HERE = {"grouped_mm", "scaled_mm", "scaled_grouped_mm", "linear_cross_entropy",
            "handle_torch_function", "boolean_dispatch", "assert_int_or_pair", "sigmoid",
            "tanh"}


def functional_calls():
    """(name, positional arguments as (is_tensor, value)..., keyword arguments) for every public
    function of PyTorch's torch.nn.functional."""
    F = torch.nn.functional
    calls = []
    for name in sorted(dir(F)):
        f = getattr(F, name)
        if name.startswith("_") or name in NOT_HERE or isinstance(f, type) or \
                not callable(f) or getattr(f, "__module__", "") in ("typing", "torch._C"):
            continue
        if name in C_CALLS:
            n, rest = C_CALLS[name]
            calls.append((name, [(True, f"t{i}") for i in range(n)] + [(False, v) for v in rest],
                          {}))
        elif name in DISPATCHED:
            calls.append((name, [(True, "input"), (False, 2)], {}))
            calls.append((name, [(True, "input"), (False, 2)],
                          {"return_indices": (False, True)}))
        elif isinstance(f, types.FunctionType):
            params = inspect.signature(f).parameters.values()
            calls.append((name, [(True, p.name) for p in params if p.default is p.empty and
                                 p.kind is p.POSITIONAL_OR_KEYWORD],
                          {p.name: (True, p.name) for p in params
                           if p.default is p.empty and p.kind is p.KEYWORD_ONLY}))
    return calls


def seen_by_torch_function(t, qualified_name, name, args, kwargs):
    R = recorder(qualified_name)

    def value(arg):
        is_tensor, v = arg
        return R(v) if is_tensor else v
    with pytest.raises(Seen) as info:
        getattr(t.nn.functional, name)(*map(value, args),
                                       **{k: value(v) for k, v in kwargs.items()})
    return repr(info.value.args)


@torch_ref
def test_every_functional_call_is_seen_as_pytorchs():
    from torch.fx.node import _get_qualified_name as theirs
    from pytorchlite.fx.node import _get_qualified_name as ours
    calls = functional_calls()
    assert len(calls) > 120
    for name, args, kwargs in calls:
        assert seen_by_torch_function(ptl, ours, name, args, kwargs) == \
            seen_by_torch_function(torch, theirs, name, args, kwargs), name
