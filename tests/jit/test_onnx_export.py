"""pytorchlite.onnx.export: the MLP, small CNNs (with BatchNorm, with GroupNorm) and a
char-GPT block, run with onnxruntime, match eager mode to 1e-5; dynamic_axes, verify=True and
the errors."""
import io
import math

import numpy as np
import pytest

import pytorchlite as ptl

onnx = pytest.importorskip("onnx", reason="the ONNX exporter needs the optional onnx package")
ort = pytest.importorskip("onnxruntime", reason="running exported files needs onnxruntime")
nn = ptl.nn
F = ptl.nn.functional


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5)
        self.fc2 = nn.Linear(5, 2)

    def forward(self, x):
        return self.fc2(ptl.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv(x)))
        return self.fc(ptl.flatten(x, 1))


class BatchNormCNN(nn.Module):
    """Convolutions with BatchNorm2d (affine and not) and a BatchNorm1d head, whose running
    statistics are not the initial ones."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.bn_plain = nn.BatchNorm2d(4, affine=False)
        self.fc = nn.Linear(4 * 8 * 8, 6)
        self.bn1d = nn.BatchNorm1d(6, eps=1e-3)
        for bn in (self.bn, self.bn_plain, self.bn1d):
            c = bn.running_mean.numel()
            bn.running_mean.copy_(ptl.linspace(-1, 1, c))
            bn.running_var.copy_(ptl.linspace(0.5, 2, c))

    def forward(self, x):
        x = self.bn_plain(F.relu(self.bn(self.conv(x))))
        return self.bn1d(self.fc(ptl.flatten(x, 1)))


class GroupNormCNN(nn.Module):
    """GroupNorm on images (affine, and not), and on the [N, C] rows of a Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 6, 3, padding=1)
        self.gn = nn.GroupNorm(3, 6)
        self.gn_plain = nn.GroupNorm(2, 6, affine=False, eps=1e-3)
        self.fc = nn.Linear(6 * 8 * 8, 4)
        self.gn_rows = nn.GroupNorm(2, 4)
        with ptl.no_grad():
            for gn in (self.gn, self.gn_rows):
                gn.weight.copy_(ptl.linspace(0.5, 2, gn.weight.numel()))
                gn.bias.copy_(ptl.linspace(-1, 1, gn.bias.numel()))

    def forward(self, x):
        x = self.gn_plain(F.relu(self.gn(self.conv(x))))
        return self.gn_rows(self.fc(ptl.flatten(x, 1)))


class GPTBlock(nn.Module):
    """Token and position embeddings, one pre-norm attention block with a causal mask and a
    GELU MLP, and the vocabulary head."""

    def __init__(self, vocab=11, n_embd=16, n_head=2, block=8):
        super().__init__()
        self.n_head = n_head
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)
        self.ln2 = nn.LayerNorm(n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.fc2 = nn.Linear(4 * n_embd, n_embd)
        self.head = nn.Linear(n_embd, vocab)
        self.register_buffer("mask", ptl.ones(block, block).tril())

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(ptl.arange(T))
        h = self.ln1(x)
        C = h.shape[-1]
        q, k, v = self.qkv(h).split(C, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(self.mask[:T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        x = x + self.fc2(F.gelu(self.fc(self.ln2(x))))
        return self.head(x)


def export(model, x, **kwargs):
    f = io.BytesIO()
    result = ptl.onnx.export(model, (x,), f, **kwargs)
    return f.getvalue(), result


def run(data, x):
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x.numpy()})


CASES = [
    (MLP, lambda b: ptl.randn(b, 3)),
    (CNN, lambda b: ptl.randn(b, 1, 8, 8)),
    (BatchNormCNN, lambda b: ptl.randn(b, 1, 8, 8)),
    (GroupNormCNN, lambda b: ptl.randn(b, 1, 8, 8)),
    (GPTBlock, lambda b: ptl.randint(0, 11, (b, 8))),
]


@pytest.mark.parametrize("model_cls,make", CASES)
def test_exported_model_matches_eager(model_cls, make):
    ptl.manual_seed(0)
    model = model_cls().eval()
    data, _ = export(model, make(4), input_names=["x"], output_names=["y"],
                     dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto)
    assert [i.name for i in proto.graph.input] == ["x"]
    assert [o.name for o in proto.graph.output] == ["y"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    # every parameter and buffer the eval forward reads (not BatchNorm's step counter)
    assert {i.name for i in proto.graph.initializer} >= {
        k for k in model.state_dict() if not k.endswith("num_batches_tracked")}
    for batch in (4, 1, 7):   # dynamic_axes: other batch sizes run
        x = make(batch)
        with ptl.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(run(data, x)[0], expected, rtol=1e-5, atol=1e-5)


def test_static_shapes_without_dynamic_axes():
    data, _ = export(MLP().eval(), ptl.randn(4, 3))
    proto = onnx.load_from_string(data)
    assert [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == [4, 3]
    assert proto.graph.input[0].name == "x"   # the forward's argument name
    assert proto.opset_import[0].version == 17


def test_verify_reports_the_largest_difference():
    model = GPTBlock().eval()
    _, diff = export(model, ptl.randint(0, 11, (2, 8)), verify=True)
    assert isinstance(diff, float) and 0.0 <= diff < 1e-5
    assert export(MLP().eval(), ptl.randn(2, 3))[1] is None


def test_tuple_outputs_and_functions():
    data, _ = export(lambda x: (x.exp(), x.tanh() * 2), ptl.randn(2, 3))
    x = ptl.randn(2, 3)
    a, b = run(data, x)
    np.testing.assert_allclose(a, x.exp().numpy(), rtol=1e-6)
    np.testing.assert_allclose(b, (x.tanh() * 2).numpy(), rtol=1e-6)


def test_errors():
    with pytest.raises(RuntimeError, match=r"^Exporting the operator 'aten::cumsum' to ONNX "
                                           r"opset version 17 is not supported\.$"):
        export(lambda x: x.cumsum(0), ptl.randn(3))
    with pytest.raises(ValueError, match="opset_version 11 is not supported"):
        export(MLP(), ptl.randn(2, 3), opset_version=11)
    with pytest.raises(RuntimeError, match="'aten::native_layer_norm' to ONNX opset version "
                                           "16"):
        export(nn.LayerNorm(3), ptl.randn(2, 3), opset_version=16)
    with pytest.raises(RuntimeError, match="'aten::native_batch_norm' to ONNX opset version "
                                           "17"):
        export(lambda x: F.batch_norm(x, None, None, training=True), ptl.randn(2, 3))
