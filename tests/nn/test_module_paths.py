"""The module paths programs name (torch.nn.modules.activation.MultiheadAttention, ...),
nn.Module.share_memory(), and torch.load of a whole pickled nn.Module (saved by pytorchlite,
and by PyTorch where it is installed)."""
import importlib
import io
import pickle

import numpy as np
import pytest

import pytorchlite as ptl

from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

PATHS = [
    ("activation", "MultiheadAttention"), ("activation", "ReLU"), ("activation", "GELU"),
    ("linear", "NonDynamicallyQuantizableLinear"), ("linear", "Linear"),
    ("linear", "Identity"), ("module", "Module"), ("conv", "Conv2d"), ("conv", "Conv1d"),
    ("container", "Sequential"), ("container", "ModuleList"), ("dropout", "Dropout"),
    ("batchnorm", "BatchNorm2d"), ("normalization", "LayerNorm"), ("pooling", "MaxPool2d"),
    ("sparse", "Embedding"), ("loss", "CrossEntropyLoss"), ("rnn", "LSTM"),
    ("transformer", "TransformerEncoderLayer"), ("flatten", "Flatten"),
]


@pytest.mark.parametrize("module,name", PATHS)
def test_module_path(module, name):
    cls = getattr(importlib.import_module("pytorchlite.nn.modules." + module), name)
    assert cls.__module__ == "pytorchlite.nn.modules." + module
    assert cls.__name__ == name


@needs_torch
@pytest.mark.parametrize("module,name", PATHS)
def test_module_path_as_torch(module, name):
    assert getattr(importlib.import_module("torch.nn.modules." + module), name).__module__ == \
        "torch.nn.modules." + module


def test_multihead_attention_names():
    assert ptl.nn.MultiheadAttention is ptl.nn.modules.activation.MultiheadAttention
    assert ptl.nn.modules.transformer.MultiheadAttention is ptl.nn.MultiheadAttention
    mha = ptl.nn.MultiheadAttention(4, 2)
    assert type(mha.out_proj) is ptl.nn.modules.linear.NonDynamicallyQuantizableLinear
    assert isinstance(mha.out_proj, ptl.nn.Linear)


def test_share_memory():
    model = ptl.nn.Sequential(ptl.nn.Linear(3, 4), ptl.nn.BatchNorm1d(4))
    weight = model[0].weight
    model(ptl.randn(5, 3)).sum().backward()
    assert model.share_memory() is model
    assert model[0].weight is weight
    for t in list(model.parameters()) + list(model.buffers()):
        assert t.is_shared()
    assert all(p.grad.is_shared() for p in model.parameters())


class Net(ptl.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ptl.nn.Conv2d(1, 2, 3)
        self.bn = ptl.nn.BatchNorm2d(2)
        self.fc = ptl.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(self.bn(self.conv(x)).relu().flatten(1))


def test_load_whole_module_roundtrip():
    ptl.manual_seed(0)
    net = Net().eval()
    x = ptl.arange(32.0).reshape(2, 1, 4, 4) / 10
    buf = io.BytesIO()
    ptl.save(net, buf)
    buf.seek(0)
    loaded = ptl.load(buf, weights_only=False)
    assert type(loaded) is Net and loaded is not net
    assert type(loaded.fc.weight) is ptl.nn.Parameter
    np.testing.assert_array_equal(loaded(x).detach().numpy(), net(x).detach().numpy())
    loaded.train()
    loaded(x).sum().backward()
    assert loaded.conv.weight.grad.shape == (2, 1, 3, 3)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="^Weights only load failed"):
        ptl.load(buf)


@needs_torch
def test_load_whole_module_saved_by_torch(tmp_path):
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                              torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8, 3))
    ref.eval()
    path = tmp_path / "model.pt"
    torch.save(ref, path)
    loaded = ptl.load(path, weights_only=False)
    assert type(loaded) is ptl.nn.Sequential
    assert [type(m).__name__ for m in loaded] == [type(m).__name__ for m in ref]
    x = np.arange(32, dtype=np.float32).reshape(2, 1, 4, 4) / 10
    np.testing.assert_allclose(loaded(ptl.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_load_torch_global_without_counterpart():
    data = b"\x80\x02ctorch.nn.modules.made_up\nMade\n."   # GLOBAL, STOP
    unpickler = ptl.serialization._Unpickler(io.BytesIO(data), False, None)
    with pytest.raises(pickle.UnpicklingError, match="^torch.nn.modules.made_up.Made has no "
                                                     "counterpart in pytorchlite"):
        unpickler.load()
