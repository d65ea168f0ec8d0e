"""LazyLinear, LazyModuleMixin and UninitializedParameter / UninitializedBuffer: the first
forward infers in_features, materializes the parameters with Linear's initialization and
turns the module into a Linear; the values against NumPy, training through it, the errors
and PyTorch's reprs and class changes when torch is installed."""
import copy
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, torch, torch_ref


def test_lazy_linear_becomes_linear():
    m = ptl.nn.LazyLinear(3)
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert isinstance(m.weight, ptl.nn.UninitializedParameter)
    assert m.has_uninitialized_params()
    x = ptl.tensor(np.random.default_rng(0).standard_normal((4, 5)), dtype=ptl.float32)
    y = m(x)
    assert type(m) is ptl.nn.Linear and type(m.weight) is ptl.nn.Parameter
    assert repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    assert tuple(m.weight.shape) == (3, 5) and tuple(m.bias.shape) == (3,)
    bound = 1 / math.sqrt(5)   # kaiming_uniform(a=sqrt(5)) and the bias, as Linear
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert_close(y.detach(), x.numpy() @ w.T + b)
    assert not hasattr(m, "_initialize_hook")
    assert_close(m(x).detach(), x.numpy() @ w.T + b)   # the second call is a plain Linear call


def test_lazy_linear_options_and_training():
    m = ptl.nn.LazyLinear(2, bias=False, dtype=ptl.float64)
    assert m.bias is None
    m(ptl.ones(3, dtype=ptl.float64))                      # unbatched input
    assert m.weight.dtype == ptl.float64 and tuple(m.weight.shape) == (2, 3)
    net = ptl.nn.Sequential(ptl.nn.LazyLinear(4), ptl.nn.ReLU(), ptl.nn.LazyLinear(1))
    x = ptl.tensor(np.random.default_rng(1).standard_normal((16, 3)), dtype=ptl.float32)
    net(x)
    opt = ptl.optim.SGD(net.parameters(), lr=0.05)
    target = x.sum(1, keepdim=True)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = ((net(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        first = float(loss) if first is None else first
    assert float(loss) < first
    assert len(list(net.parameters())) == 4


def test_uninitialized_tensors():
    p = ptl.nn.UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized "
                                           "parameter or buffer"):
        p.shape
    q = copy.deepcopy(p)
    assert type(q) is ptl.nn.UninitializedParameter and q is not p
    p.materialize((2, 3), dtype=ptl.float64)
    assert type(p) is ptl.nn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == ptl.float64
    b = ptl.nn.UninitializedBuffer()
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize((4,))
    assert type(b) is ptl.Tensor and tuple(b.shape) == (4,)


def test_mixin_without_initializer():
    class Half(ptl.nn.modules.lazy.LazyModuleMixin, ptl.nn.Module):
        def forward(self, x):
            return x
    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented "
                                                  "for Half"):
        Half()(ptl.ones(1))


@torch_ref
def test_matches_torch():
    for lib in (ptl, torch):
        m = lib.nn.LazyLinear(3)
        assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
        m(lib.ones(2, 5))
        assert type(m).__name__ == "Linear" and repr(m) == \
            "Linear(in_features=5, out_features=3, bias=True)"
    assert repr(ptl.nn.UninitializedParameter()) == repr(torch.nn.UninitializedParameter())
